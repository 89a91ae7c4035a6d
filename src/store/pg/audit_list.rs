//! The web view's list of executions on PostgreSQL (see `store::audit_list`).

use super::Pg;
use crate::store::audit::AuditFilter;
use crate::store::audit_list::{
    finish, labels_of, page_clause, sums_sql, Arg, ListPage, ListRow, ToolSum, ROW_COLUMNS,
};
use crate::store::StoreError;

impl Pg {
    pub fn audit_list(
        &self,
        filter: &AuditFilter,
        before: Option<i64>,
    ) -> Result<ListPage, StoreError> {
        self.read(async |c| {
            let (clause, args) = page_clause(filter, before, |n| format!("${n}"));
            let sql = format!("SELECT {ROW_COLUMNS} FROM audit a{clause}");
            let args: Vec<Box<dyn tokio_postgres::types::ToSql + Sync + Send>> = args
                .into_iter()
                .map(|a| -> Box<dyn tokio_postgres::types::ToSql + Sync + Send> {
                    match a {
                        Arg::Real(v) => Box::new(v),
                        Arg::Text(v) => Box::new(v),
                        Arg::Int(v) => Box::new(v),
                    }
                })
                .collect();
            let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                args.iter().map(|a| a.as_ref() as _).collect();
            let rows: Vec<ListRow> = c
                .query(&sql, &params)
                .await?
                .iter()
                .map(|r| ListRow {
                    id: r.get(0),
                    ts: r.get(1),
                    principal: r.get(2),
                    tenant: r.get(3),
                    client: r.get(4),
                    front: r.get(5),
                    outcome: r.get(6),
                    duration_ms: r.get(7),
                    labels: labels_of(r.get(8)),
                    calls: 0,
                    failed_calls: 0,
                    tools: Vec::new(),
                })
                .collect();
            let ids: Vec<i64> = rows
                .iter()
                .take(filter.limit.max(1))
                .map(|r| r.id)
                .collect();
            let sums: Vec<ToolSum> = if ids.is_empty() {
                Vec::new()
            } else {
                // `seq` is BIGINT: COUNT, SUM of an INTEGER and MIN all answer BIGINT.
                let sql = sums_sql("SELECT unnest($1::BIGINT[])");
                c.query(&sql, &[&ids])
                    .await?
                    .iter()
                    .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
                    .collect()
            };
            Ok(finish(rows, filter.limit, sums))
        })
    }
}
