"""robo-goggles' private package path, kept only so its own examples import unchanged.

robo-goggles' ``examples/100_interrupt.py`` does ``from goggles._core.integrations import
ConsoleHandler``; the handlers' real home is :mod:`goggles_io.handlers`.
"""
