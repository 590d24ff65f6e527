"""rtmem report: plots and one HTML page from the rtmem tools' JSON results
(docs/report.md)."""
