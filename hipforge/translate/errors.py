"""The one error of the translator: every stage declines a task by raising it, naming what it cannot cover."""


class Untranslatable(Exception):
    """The task uses something the translator cannot turn into a correct kernel; the message says what."""
