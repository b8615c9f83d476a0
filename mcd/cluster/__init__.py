"""Everything that talks to the API server, through the ``kubernetes`` client.

The only package allowed to import ``kubernetes``.
"""
