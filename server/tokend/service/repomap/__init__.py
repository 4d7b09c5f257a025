"""repoMap/get and the map context/assemble sends."""
