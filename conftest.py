"""Settings for the whole test run, notebooks included.

Progress bars would write to notebook outputs (which nbval compares) and to test logs; the automatic
ones are off. Kernels that nbval starts inherit this environment.
"""

import os

os.environ["SYKIT_PROGRESS"] = "0"
