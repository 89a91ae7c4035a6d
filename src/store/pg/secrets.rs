//! Shared secrets on PostgreSQL (see `store::secrets`).

use super::super::secrets::{fresh, key_of};
use super::super::StoreError;
use super::Pg;

impl Pg {
    pub fn shared_secret(&self, name: &str) -> Result<String, StoreError> {
        let (key, value) = (key_of(name), fresh()?);
        self.write(async |tx| {
            tx.execute(
                "INSERT INTO kv (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
                &[&key, &value],
            )
            .await?;
            let row = tx
                .query_one("SELECT value FROM kv WHERE key = $1", &[&key])
                .await?;
            Ok(row.get::<_, String>(0))
        })
    }
}
