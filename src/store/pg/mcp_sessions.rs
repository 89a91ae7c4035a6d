//! MCP sessions kept on PostgreSQL (see `store::mcp_sessions`), shared by every gateway; times
//! are the database's clock.

use super::super::mcp_sessions::{ms, StoredSession};
use super::super::StoreError;
use super::Pg;
use std::time::Duration;

/// The database's clock in milliseconds since the Unix epoch.
const NOW_MS: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

impl Pg {
    pub fn keep_mcp_session(&self, id: &str, s: &StoredSession) -> Result<(), StoreError> {
        self.write(async |tx| {
            tx.execute(
                &format!(
                    "INSERT INTO mcp_sessions (id, tenant, principal, init, seen_ms) \
                     VALUES ($1, $2, $3, $4, {NOW_MS}) ON CONFLICT (id) DO NOTHING"
                ),
                &[&id, &s.tenant, &s.principal, &s.init],
            )
            .await?;
            Ok(())
        })
    }

    pub fn mcp_session(
        &self,
        id: &str,
        idle: Duration,
    ) -> Result<Option<StoredSession>, StoreError> {
        let idle = ms(idle);
        self.read(async |c| {
            Ok(c.query_opt(
                &format!(
                    "SELECT tenant, principal, init FROM mcp_sessions \
                     WHERE id = $1 AND seen_ms >= {NOW_MS} - $2"
                ),
                &[&id, &idle],
            )
            .await?
            .map(|r| StoredSession {
                tenant: r.get(0),
                principal: r.get(1),
                init: r.get(2),
            }))
        })
    }

    pub fn forget_mcp_session(&self, id: &str) -> Result<(), StoreError> {
        self.write(async |tx| {
            tx.execute("DELETE FROM mcp_sessions WHERE id = $1", &[&id])
                .await?;
            Ok(())
        })
    }

    pub fn renew_mcp_sessions(
        &self,
        used: &[String],
        held: &[String],
        idle: Duration,
    ) -> Result<Vec<String>, StoreError> {
        let idle = ms(idle);
        self.write(async |tx| {
            if !used.is_empty() {
                tx.execute(
                    &format!("UPDATE mcp_sessions SET seen_ms = {NOW_MS} WHERE id = ANY($1)"),
                    &[&used],
                )
                .await?;
            }
            tx.execute(
                &format!("DELETE FROM mcp_sessions WHERE seen_ms < {NOW_MS} - $1"),
                &[&idle],
            )
            .await?;
            let rows = tx
                .query(
                    "SELECT id FROM mcp_sessions WHERE id = ANY($1) ORDER BY id",
                    &[&held],
                )
                .await?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }
}
