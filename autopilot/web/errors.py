"""The web page's start-up error, importable without the web server library."""


class WebError(Exception):
    """The web server could not start (address in use, a bad address); the message says which."""
