"""The exceptions of the package."""


class CatervaError(Exception):
    """An array could not be opened or read, or an argument is wrong."""


class ExtensionError(CatervaError):
    """The caterva extension could not be found or loaded."""
