"""The sections of the report, in page order.

A section is a module with:

    NAME       file stem of its results (`<DIR>/<NAME>.json`) and anchor on the page
    TITLE      heading on the page
    TEMPLATE   its Jinja2 partial in reports/templates/
    compute(quick: bool, progress) -> (data: dict, config: dict)
        `progress(done, total, what)` reports how far it is; `quick` picks the smaller sizes.
"""

from __future__ import annotations

from linrnn.reports.sections import crosscheck, norms, reference, speed, tasks, theory

SECTIONS = (reference, crosscheck, theory, speed, tasks, norms)
