"""Fixtures of the plugin's tests.

pytester runs inner pytest sessions in this process and afterwards removes the modules
they imported; a C extension such as numpy.fft (pulled in by scipy.stats, which the
run's t-interval uses) cannot be loaded a second time in one process. Importing
scipy.stats here, before any inner session, keeps it loaded across them.
"""

import scipy.stats  # noqa: F401
