"""The report: sections computed to versioned JSON, rendered to one self-contained HTML page."""
