//! `mcp-sandbox migrate`: brings a state store's schema up to date and exits, so the owner role
//! of a PostgreSQL database can migrate it while the gateways run with a role that has row
//! rights only (docs/multi-gateway.md, "Least privilege"). On a SQLite file it does what any
//! command's opening does.

use super::team::TeamStoreArgs;
use super::UsageError;
use clap::Args;

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub store: TeamStoreArgs,
}

/// Opens (and so migrates) the store; prints the schema version it is at.
pub fn command(args: MigrateArgs) -> Result<i32, UsageError> {
    let (store, _) = args.store.open()?;
    let version = store.schema_version().map_err(|e| {
        UsageError(format!(
            "the state store was migrated, but reading its version failed: {e}"
        ))
    })?;
    println!(
        "state store {} is at schema version {version}",
        store.path().display()
    );
    Ok(0)
}
