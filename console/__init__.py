"""The console: read-only pages for the people this server is for (auditors, evaluation
teams, operators), served by the API itself under /console, plus the few actions their
key's scopes allow (moving an alias, publishing a draft after its dry run).

``console.router`` is the router ``api.app`` mounts; ``views/`` hold what each page shows,
``pages/`` the routes, ``templates/`` and ``static/`` the rest.
"""
