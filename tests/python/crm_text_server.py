"""A stdio MCP server on the official MCP Python SDK (mcp 2.3.0, MCPServer) that answers JSON as
text, as Python servers often do (no structuredContent), for tests/sensitive_fields.rs.

Tools:
- get_customer {id} -> one text item: the JSON of {id, name, account, email}, where `account`
  is a value no detector finds (only `fields` can mark it);
- get_customers {ids} -> one text item per customer (a content array), each that JSON;
- get_notes {bytes} -> one text item: the JSON of {id, notes} with `notes` of `bytes` letters;
- send_mail {to, subject} -> "sent"; appends what it received as one JSON line to the file
  named by CRM_MAIL_LOG.
"""

import json
import os

from mcp.server.mcpserver import MCPServer
from mcp.types import TextContent

server = MCPServer("crm-text")


def record(i: int) -> dict:
    return {
        "id": i,
        "name": "Ada Lovelace",
        "account": f"ACC-{i:04d}-XQ",
        "email": f"ada{i}@example.com",
    }


@server.tool(structured_output=False)
def get_customer(id: int) -> str:
    """A customer record, as JSON text."""
    return json.dumps(record(id))


@server.tool(structured_output=False)
def get_customers(ids: list[int]) -> list[TextContent]:
    """Customer records, one JSON text item each."""
    return [TextContent(type="text", text=json.dumps(record(i))) for i in ids]


@server.tool(structured_output=False)
def get_notes(bytes: int) -> str:
    """A record with long notes, as JSON text."""
    return json.dumps({"id": 7, "notes": "n" * bytes})


@server.tool(structured_output=False)
def send_mail(to: str, subject: str) -> str:
    """Pretends to send a mail; logs what it received."""
    with open(os.environ["CRM_MAIL_LOG"], "a") as f:
        f.write(json.dumps({"to": to, "subject": subject}) + "\n")
    return "sent"


if __name__ == "__main__":
    server.run()
