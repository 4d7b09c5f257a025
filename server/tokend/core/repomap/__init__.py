"""The repo map: tags, the file graph, its rank and the map's text."""
