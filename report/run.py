"""What `rtmem report` runs (tools/rtmem/report/launch.c): the report package
beside this file, with the arguments after `rtmem report`."""

import os
import sys

sys.dont_write_bytecode = True  # nothing written beside the package (it may be read-only)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from rtmem_report.cli import main  # noqa: E402

sys.exit(main())
