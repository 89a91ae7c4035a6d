//! A PostgreSQL server of a test's own: `initdb` on a temporary directory, listening only on a
//! Unix socket in that directory (no TCP port to collide with another test or the lead's), with
//! `fsync` off, stopped (`pg_ctl stop -m immediate`) and deleted when dropped.
//! [`PgServer::start_tls`] also listens on a free local TCP port with TLS (the TLS test only:
//! tokio-postgres does not use TLS on a Unix socket).
//!
//! Shared by the unit tests of `src/store` (through `#[path]`) and the integration tests, so it
//! uses nothing but std and `tempfile`. Start one per test binary or test function, not per test
//! case: each suite gets its own database from [`PgServer::database`].
//!
//! PostgreSQL refuses to run as root: as root, the server runs as the `postgres` system user
//! (created by Debian's `postgresql` package) through `runuser`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// The user the tests connect as (the cluster's superuser, trusted on the socket).
pub const USER: &str = "sandbox";
/// The port number in the socket's name (nothing listens on TCP unless started with TLS).
pub const PORT: u16 = 5432;

pub struct PgServer {
    dir: tempfile::TempDir,
    bin: PathBuf,
    as_user: Option<&'static str>,
    next_db: AtomicU32,
    /// The port of the socket's name, and of TCP when `tls`.
    port: u16,
    /// Listening on 127.0.0.1 too, with TLS (`ssl=on`, the certificate and key in the dir).
    tls: bool,
}

/// A free local TCP port (free when this returns; the server binds it right after).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

/// The directory of `initdb` and `pg_ctl`: `$PG_BIN`, else the newest under
/// `/usr/lib/postgresql/*/bin` (Debian), else the `PATH`.
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").exists())
        .collect();
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found.pop().unwrap_or_default()
}

/// Why no server can be started here (no `initdb` found), or `None` when one can.
pub fn unavailable() -> Option<String> {
    let dir = bin_dir();
    let found = if dir.as_os_str().is_empty() {
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).any(|d| d.join("initdb").is_file()))
            .unwrap_or(false)
    } else {
        dir.join("initdb").is_file()
    };
    (!found).then(|| {
        "no PostgreSQL initdb found ($PG_BIN, /usr/lib/postgresql/*/bin or the PATH); install Debian's postgresql package".to_string()
    })
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

impl PgServer {
    /// Starts a fresh server; panics with the server's log when it cannot.
    pub fn start() -> PgServer {
        Self::start_with(None)
    }

    /// Starts a fresh server that also listens on a free port of 127.0.0.1 with TLS, showing
    /// the certificate chain `cert_pem` (its key `key_pem`); see [`PgServer::tcp_url`].
    pub fn start_tls(cert_pem: &str, key_pem: &str) -> PgServer {
        Self::start_with(Some((cert_pem, key_pem)))
    }

    fn start_with(tls: Option<(&str, &str)>) -> PgServer {
        let dir = tempfile::Builder::new()
            .prefix("pg-test-")
            .tempdir()
            .expect("temporary directory");
        let as_user = is_root().then_some("postgres");
        if let Some(user) = as_user {
            let ok = Command::new("chown")
                .args(["-R", &format!("{user}:"), &dir.path().to_string_lossy()])
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            assert!(ok, "cannot chown the test database directory to {user}");
        }
        if let Some((cert, key)) = tls {
            for (name, pem) in [("server.crt", cert), ("server.key", key)] {
                let path = dir.path().join(name);
                std::fs::write(&path, pem).expect("write the TLS files");
                // The server refuses a key others can read.
                std::fs::set_permissions(
                    &path,
                    std::os::unix::fs::PermissionsExt::from_mode(0o600),
                )
                .expect("chmod the TLS files");
                if let Some(user) = as_user {
                    let ok = Command::new("chown")
                        .args([&format!("{user}:"), &*path.to_string_lossy()])
                        .status()
                        .map(|s| s.success())
                        .unwrap_or(false);
                    assert!(ok, "cannot chown {name} to {user}");
                }
            }
        }
        let server = PgServer {
            bin: bin_dir(),
            dir,
            as_user,
            next_db: AtomicU32::new(0),
            port: if tls.is_some() { free_port() } else { PORT },
            tls: tls.is_some(),
        };
        let data = server.data();
        server.run(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                USER,
                "--auth=trust",
                "--no-sync",
                "--locale=C",
                "-E",
                "UTF8",
            ],
        );
        server.pg_ctl_start();
        server
    }

    fn data(&self) -> String {
        self.dir.path().join("data").to_string_lossy().into_owned()
    }

    /// The directory of the server's Unix socket.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self, program: &str) -> Command {
        let exe = self.bin.join(program);
        match self.as_user {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(exe);
                c
            }
            None => Command::new(exe),
        }
    }

    fn run(&self, program: &str, args: &[&str]) {
        let out = self
            .command(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program} (is postgresql installed?): {e}"));
        if !out.status.success() {
            let log =
                std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
            panic!(
                "{program} failed: {}\n{}\n{log}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// The URL of database `name` (no password: the socket is trusted).
    pub fn url(&self, name: &str) -> String {
        format!(
            "postgres://{USER}@localhost/{name}?host={}&port={}",
            self.socket_dir().display(),
            self.port
        )
    }

    /// The URL of database `name` over TCP (a server from [`PgServer::start_tls`]), with
    /// `query` (e.g. `sslmode=verify-full&sslrootcert=…`).
    pub fn tcp_url(&self, name: &str, query: &str) -> String {
        assert!(self.tls, "tcp_url needs a server from PgServer::start_tls");
        format!("postgres://{USER}@localhost:{}/{name}?{query}", self.port)
    }

    /// A new empty database, and its URL.
    pub fn database(&self) -> String {
        let name = format!("t{}", self.next_db.fetch_add(1, Ordering::Relaxed));
        self.psql(&format!("CREATE DATABASE {name}"));
        self.url(&name)
    }

    /// Runs `sql` in the `postgres` database; panics when it fails.
    fn psql(&self, sql: &str) {
        self.psql_in(&self.url("postgres"), sql);
    }

    /// Runs `sql` in the database of `url` (one of [`PgServer::database`]); panics when it
    /// fails.
    pub fn psql_in(&self, url: &str, sql: &str) {
        let out = Command::new(self.bin.join("psql"))
            .args(["-v", "ON_ERROR_STOP=1", "-q", "-d"])
            .arg(url)
            .args(["-c", sql])
            .stdin(Stdio::null())
            .output()
            .expect("psql");
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Makes every commit so far durable (the server runs with `synchronous_commit=off`, so
    /// [`PgServer::stop`], an immediate stop, could lose the last ones): call before stopping
    /// a server whose data must survive the restart.
    pub fn checkpoint(&self) {
        self.psql("CHECKPOINT");
    }

    /// Stops the server (fast: the data is thrown away).
    pub fn stop(&self) {
        let _ = self
            .command("pg_ctl")
            .args(["-D", &self.data(), "-m", "immediate", "-w", "stop"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// Stops the server as an operator would (`pg_ctl stop -m fast`): clients are
    /// disconnected, open transactions rolled back, and every transaction committed so far is
    /// kept (the shutdown checkpoint writes them, `synchronous_commit=off` or not).
    pub fn stop_fast(&self) {
        self.run("pg_ctl", &["-D", &self.data(), "-m", "fast", "-w", "stop"]);
    }

    /// Starts the server again after [`PgServer::stop`] (same data, same socket).
    pub fn restart(&self) {
        self.pg_ctl_start();
    }

    fn pg_ctl_start(&self) {
        let dir = self.socket_dir().display();
        let listen = if self.tls {
            format!("'127.0.0.1' -c ssl=on -c ssl_cert_file='{dir}/server.crt' -c ssl_key_file='{dir}/server.key'")
        } else {
            "''".to_string()
        };
        let options = format!(
            "-c listen_addresses={listen} -c unix_socket_directories='{dir}' -p {} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
            self.port
        );
        let log = self.dir.path().join("server.log");
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-l",
                &log.to_string_lossy(),
                "-o",
                &options,
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
    }
}

/// Every process of a server stopped with `SIGSTOP` ([`PgServer::hang`]): it accepts
/// connections (the kernel queues them) but answers nothing, like a hung host or a network
/// black hole. Resumed (`SIGCONT`) by [`Hung::resume`] or when dropped, so a failing test never
/// leaves the server stopped.
pub struct Hung {
    pids: Vec<u32>,
    resumed: bool,
}

fn signal(name: &str, pids: &[u32]) {
    if pids.is_empty() {
        return;
    }
    let ok = Command::new("kill")
        .arg(format!("-{name}"))
        .args(pids.iter().map(u32::to_string))
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "kill -{name} {pids:?} failed");
}

/// The processes whose parent is `parent`.
fn children(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // The fields after the command's closing parenthesis: state, then the parent's pid.
        let ppid = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|s| {
                let rest = s.rsplit_once(')')?.1.to_string();
                rest.split_whitespace().nth(1)?.parse::<u32>().ok()
            });
        if ppid == Some(parent) {
            found.push(pid);
        }
    }
    found
}

impl Hung {
    /// Lets the server run again.
    pub fn resume(mut self) {
        self.resumed = true;
        signal("CONT", &self.pids);
    }
}

impl Drop for Hung {
    fn drop(&mut self) {
        if !self.resumed {
            // No assertion here: this may run while a failed test unwinds.
            let _ = Command::new("kill")
                .arg("-CONT")
                .args(self.pids.iter().map(u32::to_string))
                .status();
        }
    }
}

impl PgServer {
    /// The postmaster's pid (the first line of `postmaster.pid`).
    fn postmaster(&self) -> u32 {
        let file = self.dir.path().join("data").join("postmaster.pid");
        std::fs::read_to_string(&file)
            .ok()
            .and_then(|s| s.lines().next()?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no pid in {}", file.display()))
    }

    /// Stops every process of the server (`SIGSTOP`: the postmaster first, so it forks no new
    /// one, then its children) until the returned guard resumes them.
    pub fn hang(&self) -> Hung {
        let postmaster = self.postmaster();
        signal("STOP", &[postmaster]);
        let mut pids = vec![postmaster];
        let mut hung = Hung {
            pids: pids.clone(),
            resumed: false,
        };
        pids = children(postmaster);
        signal("STOP", &pids);
        hung.pids.extend(pids);
        hung
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.stop();
    }
}
