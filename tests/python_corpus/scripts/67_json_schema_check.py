import json

# Validate records against a tiny hand-written schema.
schema = {"id": int, "email": str, "tags": list}
raw = '[{"id": 1, "email": "a@x.io", "tags": []}, {"id": "2", "email": "b@x.io"}, {"id": 3, "email": null, "tags": ["v"]}]'
problems = []
for i, rec in enumerate(json.loads(raw)):
    for field, ty in schema.items():
        if field not in rec:
            problems.append(f"record {i}: missing {field}")
        elif not isinstance(rec[field], ty):
            problems.append(f"record {i}: {field} is {type(rec[field]).__name__}, not {ty.__name__}")
problems
