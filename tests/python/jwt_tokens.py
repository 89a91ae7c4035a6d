"""Test keys and JWT access tokens for tests/serve_jwt.rs, made fresh on every run (pyjwt and
cryptography come with the MCP SDK in .venv).

usage: jwt_tokens.py DIR ISSUER AUDIENCE
Writes DIR/jwks.json (the public key "a") and DIR/jwks_rotated.json (keys "a" and "b"),
prints a JSON object of tokens:
  good        signed by "a", scope "mcp:run", tenant claim "team-a"
  other_key   signed by another key, claiming kid "a"
  expired     exp an hour ago
  future      nbf an hour ahead
  wrong_aud   another audience
  wrong_iss   another issuer
  no_scope    valid, without any mapped scope
  hs256       HS256 with a shared secret (refused: only asymmetric algorithms)
  rotated     signed by "b" (kid "b"), valid once the JWKS has "b"
"""

import json
import os
import sys
import time

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa


def key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def main() -> None:
    out_dir, issuer, audience = sys.argv[1:4]
    a, b = key(), key()
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(a.public_key()))
    jwk.update({"kid": "a", "alg": "RS256", "use": "sig"})
    with open(os.path.join(out_dir, "jwks.json"), "w") as f:
        json.dump({"keys": [jwk]}, f)
    jwk_b = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(b.public_key()))
    jwk_b.update({"kid": "b", "alg": "RS256", "use": "sig"})
    with open(os.path.join(out_dir, "jwks_rotated.json"), "w") as f:
        json.dump({"keys": [jwk, jwk_b]}, f)
    now = int(time.time())

    def token(signer=a, kid="a", alg="RS256", **over):
        claims = {"iss": issuer, "aud": audience, "sub": "alice", "exp": now + 3600,
                  "iat": now, "scope": "mcp:run other", "tenant": "team-a"}
        claims.update(over)
        claims = {k: v for k, v in claims.items() if v is not None}
        return jwt.encode(claims, signer, algorithm=alg, headers={"kid": kid})

    print(json.dumps({
        "good": token(),
        "other_key": token(signer=b),
        "expired": token(exp=now - 3600),
        "future": token(nbf=now + 3600),
        "wrong_aud": token(aud="someone-else"),
        "wrong_iss": token(iss="https://evil.example"),
        "no_scope": token(scope="other"),
        "rotated": token(signer=b, kid="b"),
        "hs256": jwt.encode({"iss": issuer, "aud": audience, "sub": "mallory", "exp": now + 3600,
                             "scope": "mcp:run"}, "secret", algorithm="HS256", headers={"kid": "a"}),
    }))


if __name__ == "__main__":
    main()
