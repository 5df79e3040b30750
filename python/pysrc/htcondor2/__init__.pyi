# htcondor2 is gleaner.htcondor2.
from gleaner.htcondor2 import *  # noqa: F401,F403
