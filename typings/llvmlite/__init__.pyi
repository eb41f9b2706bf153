# Type stub for the `llvmlite` package root (see ir/__init__.pyi); `llvmlite.binding` is read from
# the installed package.
__version__: str
