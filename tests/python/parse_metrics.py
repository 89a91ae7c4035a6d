"""Parses a `/metrics` answer with the Prometheus project's Python client (prometheus_client,
tests/python/requirements.txt): its OpenMetrics parser, which rejects malformed text. Driven by
tests/telemetry_metrics.rs.

usage: parse_metrics.py FILE

Prints one JSON line: {"families": {name: type}, "samples": [{"name", "labels", "value"}]}.
"""

import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    families, samples = {}, []
    for family in text_string_to_metric_families(text):
        families[family.name] = family.type
        for s in family.samples:
            samples.append({"name": s.name, "labels": s.labels, "value": s.value})
    print(json.dumps({"families": families, "samples": samples}))


if __name__ == "__main__":
    main()
