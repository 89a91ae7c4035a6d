//! Least privilege on PostgreSQL (issue 44 item 8): the gateway runs with a role that has row
//! rights only (it cannot change the schema, nor is it the owner that could rewrite the audit
//! table's definition); the owner role migrates with `mcp-sandbox migrate --state URL`. A
//! row-rights role facing a migration says what to do instead of a bare "permission denied".

use crate::common::cli_run;
use crate::pg_support::{PgServer, USER};

/// `url` with the role `role` instead of the superuser.
fn as_role(url: &str, role: &str) -> String {
    url.replacen(
        &format!("postgres://{USER}@"),
        &format!("postgres://{role}@"),
        1,
    )
}

#[test]
fn a_row_rights_role_runs_and_the_owner_migrates() {
    let pg = PgServer::start();
    let owner = pg.database();
    let gateway = as_role(&owner, "gw");
    pg.psql_on(&owner, "CREATE ROLE gw LOGIN; GRANT USAGE ON SCHEMA public TO gw; REVOKE CREATE ON SCHEMA public FROM PUBLIC");

    // Before the owner migrated: the row-rights role cannot, and says what to do.
    let refused = cli_run(&["migrate", "--state", &gateway]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status, 2, "{stderr}");
    assert!(
        stderr.contains("this role may not change the schema (permission denied for schema public (42501)): run `mcp-sandbox migrate --state URL` once with the database's owner role, then start again"),
        "{stderr}"
    );

    let migrated = cli_run(&["migrate", "--state", &owner]);
    let stdout = String::from_utf8_lossy(&migrated.stdout);
    assert_eq!(
        migrated.status,
        0,
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    assert!(
        stdout.starts_with("state store postgres://sandbox@localhost/")
            && stdout.contains(" is at schema version "),
        "{stdout}"
    );

    // Row rights only, as docs/multi-gateway.md grants them.
    pg.psql_on(
        &owner,
        "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO gw; GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO gw",
    );
    let created = cli_run(&["token", "create", "ci", "--state", &gateway]);
    assert_eq!(
        created.status,
        0,
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let listed = cli_run(&["token", "list", "--state", &gateway]);
    assert_eq!(
        listed.status,
        0,
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(String::from_utf8_lossy(&listed.stdout).contains("ci"));
    let audit = cli_run(&["audit", "--state", &gateway]);
    assert_eq!(
        audit.status,
        0,
        "{}",
        String::from_utf8_lossy(&audit.stderr)
    );
    // Opening again (a gateway restarting) reads the version only: still no schema right needed.
    let again = cli_run(&["migrate", "--state", &gateway]);
    assert_eq!(
        again.status,
        0,
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}
