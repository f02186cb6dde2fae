"""The sections of the report, in page order.

A section is a module with:

    NAME       file stem of its results (`<DIR>/<NAME>.json`) and anchor on the page
    TITLE      heading on the page
    TEMPLATE   its Jinja2 partial in reports/templates/
    compute(quick: bool, progress) -> (data: dict, config: dict)
        runs the section's experiment (in `linrnn.experiments`, or the cross-check engine in
        `linrnn.verify.crosscheck`) and adds the descriptions of its figures (`data["plots"]`, plain data
        that `linrnn.reports.plots` draws when the page renders); `progress(done, total, what)` reports
        how far it is; `quick` picks the smaller sizes.

and optionally (docs/report.md):

    summary(data) -> str          the section's finding in one line, shown above its details
    LEAD                          names (or name prefixes) of its figures shown above its details
    render_plots(data) -> dict    figure descriptions derived from the saved data when the page renders

No section decides a claim's verdict: the ledger (`linrnn.reports.ledger`) settles every claim from
the saved measurements when the page renders.
"""

from __future__ import annotations

from linrnn.reports.sections import (conformance, crosscheck, experiments, gpucheck, norms, precision_map, reference,
                                     speed, tasks, theory, training_reduced, training_speed)

SECTIONS = (reference, crosscheck, conformance, theory, precision_map, speed, training_speed, tasks, training_reduced,
            experiments, norms, gpucheck)
