"""Test-wide settings: read-ahead off (ui/readahead.py), so a test's passes are its own.

AppTest runs and the servers the browser and load tests start inherit this; the read-ahead's
own tests turn it on where they need it.
"""

import os

os.environ.setdefault("VIT_EXPLAINER_READ_AHEAD", "0")
