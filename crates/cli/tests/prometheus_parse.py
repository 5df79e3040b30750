"""Parses a /metrics body (stdin) with the Prometheus project's own Python
parsers and prints the samples as JSON: [[name, {labels}, value], ...].

Both parsers must accept it: the OpenMetrics parser (strict: TYPE before
samples, counters' _total, the final # EOF) and the classic Prometheus
text-format parser. Exit code 3 when prometheus_client is not installed.
"""
import json
import sys

try:
    from prometheus_client.openmetrics.parser import (
        text_string_to_metric_families as openmetrics_families,
    )
    from prometheus_client.parser import (
        text_string_to_metric_families as prometheus_families,
    )
except ImportError as e:  # the test skips unless GLEANER_REQUIRE_ORACLE=1
    print(f"cannot import prometheus_client: {e}", file=sys.stderr)
    sys.exit(3)

text = sys.stdin.read()
samples = []
for family in openmetrics_families(text):
    for s in family.samples:
        samples.append([s.name, s.labels, s.value])
classic = 0
# The classic parser does not know "# EOF"; to it that is a comment.
for family in prometheus_families(text):
    classic += len(family.samples)
if classic == 0 or len(samples) == 0:
    print("no samples parsed", file=sys.stderr)
    sys.exit(1)
json.dump(samples, sys.stdout)
