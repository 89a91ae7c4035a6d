//! The web view's list of executions: one page of the audit log, newest first, by a keyset
//! cursor (`before`: the id the next page starts under), without the code and the detail of
//! each record, and with each record's calls summed up in one query for the page (how many,
//! how many failed, which tools) instead of every call loaded.

use super::audit::AuditFilter;
use super::{Store, StoreError};

/// One execution as a list shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListRow {
    pub id: i64,
    pub ts: f64,
    pub principal: String,
    pub tenant: String,
    pub client: Option<String>,
    pub front: String,
    pub outcome: String,
    pub duration_ms: f64,
    pub labels: Vec<String>,
    pub calls: u64,
    pub failed_calls: u64,
    /// The tools it called, each once, in the order of their first call.
    pub tools: Vec<String>,
}

/// One page: its rows (newest first) and the cursor of the next page, when there is one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListPage {
    pub rows: Vec<ListRow>,
    /// Pass it as `before` for the next (older) page; `None` on the last page.
    pub next: Option<i64>,
}

/// A value a list query binds.
#[derive(Debug, Clone)]
pub(super) enum Arg {
    Real(f64),
    Text(String),
    Int(i64),
}

/// The list's `WHERE … ORDER BY … LIMIT` for `filter` under `before`, with `mark(n)` the n-th
/// (from 1) parameter's placeholder (`?n` for SQLite, `$n` for PostgreSQL). One row more than
/// `filter.limit` is asked for, to learn whether another page follows.
pub(super) fn page_clause(
    filter: &AuditFilter,
    before: Option<i64>,
    mark: fn(usize) -> String,
) -> (String, Vec<Arg>) {
    let mut sql = String::from(" WHERE 1 = 1");
    let mut args = Vec::new();
    let bind = |sql: &mut String, args: &mut Vec<Arg>, arg: Arg, text: &str| {
        args.push(arg);
        sql.push_str(&text.replace("{}", &mark(args.len())));
    };
    if let Some(b) = before {
        bind(&mut sql, &mut args, Arg::Int(b), " AND a.id < {}");
    }
    if let Some(since) = filter.since_ms {
        bind(&mut sql, &mut args, Arg::Real(since), " AND a.ts >= {}");
    }
    if let Some(p) = &filter.principal {
        bind(
            &mut sql,
            &mut args,
            Arg::Text(p.clone()),
            " AND a.principal = {}",
        );
    }
    if let Some(t) = &filter.tenant {
        bind(
            &mut sql,
            &mut args,
            Arg::Text(t.clone()),
            " AND a.tenant = {}",
        );
    }
    if let Some(tool) = &filter.tool {
        bind(
            &mut sql,
            &mut args,
            Arg::Text(tool.clone()),
            " AND EXISTS (SELECT 1 FROM audit_calls c WHERE c.audit_id = a.id AND c.tool = {})",
        );
    }
    if let Some(code) = &filter.error {
        bind(
            &mut sql,
            &mut args,
            Arg::Text(code.clone()),
            " AND (a.outcome = {} OR EXISTS (SELECT 1 FROM audit_calls c WHERE c.audit_id = a.id AND c.error = {}))",
        );
    }
    let limit = i64::try_from(filter.limit.max(1)).unwrap_or(i64::MAX - 1) + 1;
    bind(
        &mut sql,
        &mut args,
        Arg::Int(limit),
        " ORDER BY a.id DESC LIMIT {}",
    );
    (sql, args)
}

/// The columns of a list row, in the order [`ListRow`] is read from.
pub(super) const ROW_COLUMNS: &str =
    "a.id, a.ts, a.principal, a.tenant, a.client, a.front, a.outcome, a.duration_ms, a.labels";

/// The labels column as a list.
pub(super) fn labels_of(text: Option<String>) -> Vec<String> {
    text.and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// One tool's calls in one record: `(audit_id, tool, calls, failed, first seq)`.
pub(super) type ToolSum = (i64, String, i64, i64, i64);

/// The per-tool sums of the page's records, in one query (`?`/`$` placeholder list given).
pub(super) fn sums_sql(ids: &str) -> String {
    format!(
        "SELECT audit_id, tool, COUNT(*), SUM(CASE WHEN error IS NULL THEN 0 ELSE 1 END), MIN(seq)
         FROM audit_calls WHERE audit_id IN ({ids}) GROUP BY audit_id, tool"
    )
}

/// Cuts `rows` to `limit` (the cursor when one more came) and puts the sums in them.
pub(super) fn finish(mut rows: Vec<ListRow>, limit: usize, mut sums: Vec<ToolSum>) -> ListPage {
    let limit = limit.max(1);
    let next = (rows.len() > limit).then(|| {
        rows.truncate(limit);
        rows.last().map_or(0, |r| r.id)
    });
    sums.sort_by_key(|s| (s.0, s.4));
    for row in &mut rows {
        for (_, tool, calls, failed, _) in sums.iter().filter(|s| s.0 == row.id) {
            row.calls += u64::try_from(*calls).unwrap_or(0);
            row.failed_calls += u64::try_from(*failed).unwrap_or(0);
            row.tools.push(tool.clone());
        }
    }
    ListPage { rows, next }
}

impl Store {
    /// One page of the audit log for a list (see the module's comment): the records matching
    /// `filter` with an id below `before` (all when `None`), newest first, at most
    /// `filter.limit`.
    pub fn audit_list(
        &self,
        filter: &AuditFilter,
        before: Option<i64>,
    ) -> Result<ListPage, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.audit_list(filter, before);
        }
        self.with(|conn| {
            let (clause, args) = page_clause(filter, before, |n| format!("?{n}"));
            let sql = format!("SELECT {ROW_COLUMNS} FROM audit a{clause}");
            let args = args.into_iter().map(|a| match a {
                Arg::Real(v) => rusqlite::types::Value::Real(v),
                Arg::Text(v) => rusqlite::types::Value::Text(v),
                Arg::Int(v) => rusqlite::types::Value::Integer(v),
            });
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
                Ok(ListRow {
                    id: r.get(0)?,
                    ts: r.get(1)?,
                    principal: r.get(2)?,
                    tenant: r.get(3)?,
                    client: r.get(4)?,
                    front: r.get(5)?,
                    outcome: r.get(6)?,
                    duration_ms: r.get(7)?,
                    labels: labels_of(r.get(8)?),
                    calls: 0,
                    failed_calls: 0,
                    tools: Vec::new(),
                })
            })?;
            let rows = rows.collect::<Result<Vec<_>, _>>()?;
            let ids: Vec<i64> = rows
                .iter()
                .take(filter.limit.max(1))
                .map(|r| r.id)
                .collect();
            let sums = if ids.is_empty() {
                Vec::new()
            } else {
                let marks = vec!["?"; ids.len()].join(", ");
                let mut stmt = conn.prepare(&sums_sql(&marks))?;
                let sums = stmt.query_map(rusqlite::params_from_iter(&ids), |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })?;
                sums.collect::<Result<Vec<ToolSum>, _>>()?
            };
            Ok(finish(rows, filter.limit, sums))
        })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::store::audit::{AuditCall, AuditRecord};

    fn record(tenant: &str, tools: &[(&str, bool)]) -> AuditRecord {
        AuditRecord {
            id: 0,
            execution_id: None,
            ts: 1.0,
            principal: "p".into(),
            tenant: tenant.into(),
            client: Some("c".into()),
            front: "http".into(),
            code: Some("x".repeat(10_000)),
            code_sha256: "00".into(),
            code_bytes: Some(10_000),
            outcome: "OK".into(),
            duration_ms: 2.0,
            labels: vec!["private".into()],
            detail: None,
            write_key: None,
            calls: tools
                .iter()
                .map(|(tool, failed)| AuditCall {
                    kind: "tool".into(),
                    tool: (*tool).into(),
                    args_sha256: None,
                    args: None,
                    error: failed.then(|| "TOOL_ERROR".to_string()),
                    duration_ms: Some(1.0),
                    approval: None,
                })
                .collect(),
        }
    }

    /// The list pages by its cursor through the reader's own connection (or pool): exact rows,
    /// newest first, each with its calls summed up; the last page has no cursor.
    pub(crate) fn the_list_pages_by_a_cursor(s: &Store) {
        let mut ids = Vec::new();
        for i in 0..5 {
            let tenant = if i == 2 { "other" } else { "t" };
            let calls: &[(&str, bool)] = match i {
                0 => &[],
                1 => &[("s:a", false), ("s:b", true), ("s:a", true)],
                _ => &[("s:c", false)],
            };
            ids.push(s.append_audit(&record(tenant, calls)).unwrap());
        }
        let reader = s.reader().unwrap();
        let filter = |limit| AuditFilter {
            tenant: Some("t".into()),
            limit,
            ..AuditFilter::default()
        };
        let page = reader.audit_list(&filter(2), None).unwrap();
        let got: Vec<i64> = page.rows.iter().map(|r| r.id).collect();
        assert_eq!(got, [ids[4], ids[3]]);
        assert_eq!(page.next, Some(ids[3]));
        let page = reader.audit_list(&filter(2), page.next).unwrap();
        let got: Vec<i64> = page.rows.iter().map(|r| r.id).collect();
        assert_eq!(got, [ids[1], ids[0]]);
        // The last page says so (`next` is `None`): no empty page after it.
        assert_eq!(page.next, None);
        let past = reader.audit_list(&filter(2), Some(ids[0])).unwrap();
        assert_eq!(past, ListPage::default());
        assert_eq!(
            page.rows[0],
            ListRow {
                id: ids[1],
                ts: 1.0,
                principal: "p".into(),
                tenant: "t".into(),
                client: Some("c".into()),
                front: "http".into(),
                outcome: "OK".into(),
                duration_ms: 2.0,
                labels: vec!["private".into()],
                calls: 3,
                failed_calls: 2,
                tools: vec!["s:a".into(), "s:b".into()],
            }
        );
        assert_eq!((page.rows[1].calls, page.rows[1].tools.len()), (0, 0));
        // Exactly `limit` rows left: no cursor.
        let all = reader.audit_list(&filter(4), None).unwrap();
        assert_eq!((all.rows.len(), all.next), (4, None));
    }
}
