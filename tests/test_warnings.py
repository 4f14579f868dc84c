"""pytest's configuration turns every warning into an error (``filterwarnings = ["error"]``).

A deprecation in a dependency or in jobtable then fails the test that
triggered it the day it starts, instead of scrolling past in a summary.
"""

import warnings

import pytest


def test_a_warning_raised_in_a_test_is_an_error() -> None:
    with pytest.raises(DeprecationWarning, match="seen the day it starts"):
        warnings.warn("seen the day it starts", DeprecationWarning, stacklevel=1)
