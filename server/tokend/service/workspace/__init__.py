"""The workspace: file index, session files and memory, the repo map.

The app (service/app.py) builds the Workspaces and hooks the session files' refresh into it, so
the sessions whose files change are measured again.
"""
