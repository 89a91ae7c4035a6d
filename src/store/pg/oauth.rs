//! OAuth credentials of remote servers on PostgreSQL (see `store::oauth`): sealed bytes only.

use super::super::oauth::{now_secs, SealedRow};
use super::super::StoreError;
use super::Pg;

impl Pg {
    pub fn oauth_credentials(&self, server: &str) -> Result<Option<SealedRow>, StoreError> {
        self.read(async |c| {
            Ok(c.query_opt(
                "SELECT url, nonce, sealed FROM oauth_credentials WHERE server = $1",
                &[&server],
            )
            .await?
            .map(|r| SealedRow {
                url: r.get(0),
                nonce: r.get(1),
                sealed: r.get(2),
            }))
        })
    }

    pub fn put_oauth_credentials(&self, server: &str, row: &SealedRow) -> Result<(), StoreError> {
        let now = now_secs();
        self.write(async |tx| {
            tx.execute(
                "INSERT INTO oauth_credentials (server, url, nonce, sealed, updated_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (server) DO UPDATE
                 SET url = EXCLUDED.url, nonce = EXCLUDED.nonce, sealed = EXCLUDED.sealed, updated_at = EXCLUDED.updated_at",
                &[&server, &row.url, &row.nonce, &row.sealed, &now],
            )
            .await?;
            Ok(())
        })
    }

    pub fn remove_oauth_credentials(&self, server: &str) -> Result<bool, StoreError> {
        self.write(async |tx| {
            Ok(tx
                .execute(
                    "DELETE FROM oauth_credentials WHERE server = $1",
                    &[&server],
                )
                .await?
                > 0)
        })
    }
}
