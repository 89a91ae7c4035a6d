"""A remote MCP server on the official MCP Python SDK (mcp 2.3.0) that is also its own OAuth
authorization server, for tests/remote_oauth.rs: protected resource metadata, authorization
server metadata, dynamic client registration, authorization code + PKCE, refresh tokens.

usage: oauth_server.py PORT

The in-memory provider below approves every authorization request at once (the /authorize
endpoint redirects straight back to the client's redirect URI with a code), so a test can follow
the printed URL with a plain HTTP client. Access tokens live ACCESS_TTL seconds. Tools:
`whoami` (the client id of the token), `stats` (how many codes, refreshes and registrations the
server saw), `revoke_all` (revokes every access and refresh token). Prints
"listening on port PORT" to stderr when ready.
"""

import secrets
import sys
import time

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

ACCESS_TTL = 2
PORT = int(sys.argv[1])
BASE = f"http://127.0.0.1:{PORT}"


class Provider:
    def __init__(self):
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}
        self.counts = {"registrations": 0, "codes": 0, "refreshes": 0}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        self.counts["registrations"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    def _issue(self, client_id, scopes, resource):
        access = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes,
            expires_at=int(time.time()) + ACCESS_TTL, resource=resource,
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(
            access_token=access, token_type="Bearer", expires_in=ACCESS_TTL,
            scope=" ".join(scopes) or None, refresh_token=refresh,
        )

    async def exchange_authorization_code(self, client, authorization_code):
        self.codes.pop(authorization_code.code, None)
        self.counts["codes"] += 1
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        self.refresh.pop(refresh_token.token, None)
        self.counts["refreshes"] += 1
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token):
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


provider = Provider()
server = MCPServer(
    "oauth-server",
    auth_server_provider=provider,
    auth=AuthSettings(
        issuer_url=BASE,
        resource_server_url=f"{BASE}/mcp",
        client_registration_options=ClientRegistrationOptions(enabled=True),
        revocation_options=RevocationOptions(enabled=True),
        validate_token_resource=False,
    ),
)


@server.tool()
def whoami() -> str:
    """Says hello."""
    return "hello, authorized client"


@server.tool()
def stats() -> dict:
    """Counts of registrations, codes exchanged and refreshes."""
    return dict(provider.counts)


@server.tool()
def revoke_all() -> str:
    """Revokes every access and refresh token."""
    provider.access.clear()
    provider.refresh.clear()
    return "revoked"


def main() -> None:
    app = server.streamable_http_app()
    config = uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning")
    uv = uvicorn.Server(config)
    original_startup = uv.startup

    async def startup(*args, **kwargs):
        await original_startup(*args, **kwargs)
        print(f"listening on port {PORT}", file=sys.stderr, flush=True)

    uv.startup = startup
    uv.run()


if __name__ == "__main__":
    main()
