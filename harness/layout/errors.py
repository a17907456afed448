"""The error the layout modules raise for a shape, stride or platform they cannot lay out."""


class LayoutError(ValueError):
    """A layout request that cannot be satisfied; the message names the field and the value."""
