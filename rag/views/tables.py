"""Tables as the pages show them: no missing value reaches a cell.

``st.dataframe`` draws a missing value (``None``, ``NaN``) as a faded "None", which reads as a
bug. :func:`display_frame` turns each column that has one into text: numbers as written (whole
numbers without decimals), the missing cells empty. Streamlit still sorts such a column by its
numbers (its "smart" sort reads numeric text as a number). Columns without gaps keep their type.
"""

from __future__ import annotations

import math

import pandas as pd

MISSING = ""  # what an empty cell shows


def cell_text(value: object, digits: int = 3) -> str:
    """One cell as text: '' for a missing value, a whole number without decimals, a float with
    ``digits`` decimals, anything else as ``str``."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def display_frame(df: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """``df`` with every column that holds a missing value turned into text (see the module)."""
    out = df.copy()
    for column in out.columns:
        if out[column].isna().any():
            out[column] = [cell_text(v, digits) for v in out[column].astype(object)]
    return out
