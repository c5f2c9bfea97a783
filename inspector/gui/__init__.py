"""The PySide6 desktop app: thin widgets and Qt item models over core objects."""
