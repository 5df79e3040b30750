# classad2 is gleaner.classad2.
from gleaner.classad2 import *  # noqa: F401,F403
