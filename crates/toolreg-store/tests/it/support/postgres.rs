//! A PostgreSQL server for tests: the one `TOOLREG_TEST_POSTGRES_URL`
//! names, or a private one started here from the `initdb`, `pg_ctl` and
//! `postgres` binaries (found on `PATH`, in `/usr/lib/postgresql/*/bin` or
//! `/usr/local/bin`) in a temporary directory, on a free loopback port.
//!
//! `initdb` refuses to run as root, so as root the server runs as `nobody`
//! (through `runuser`). A private server stops, and its directory goes,
//! when the test process ends: a watchdog shell waits for its standard
//! input, which only this process holds, to close.
//!
//! With neither, the PostgreSQL tests print one line saying what they
//! skipped and pass — unless `TOOLREG_TEST_POSTGRES_REQUIRED` is set, as CI
//! sets it, and then they fail.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Once, OnceLock};
use std::time::{Duration, Instant};

/// The URL of a server to test against.
pub const URL_VAR: &str = "TOOLREG_TEST_POSTGRES_URL";
/// Set: a PostgreSQL test that cannot find a server fails instead of skipping.
pub const REQUIRED_VAR: &str = "TOOLREG_TEST_POSTGRES_REQUIRED";

/// The base URL of a server for this test process, or `None` (after saying
/// so once) when there is none.
pub fn base_url() -> Option<String> {
    if let Ok(url) = std::env::var(URL_VAR)
        && !url.is_empty()
    {
        return Some(url);
    }
    static SHARED: OnceLock<Result<Private, String>> = OnceLock::new();
    match SHARED.get_or_init(|| Private::start(false)) {
        Ok(server) => Some(server.url.clone()),
        Err(why) => {
            skip(why);
            None
        }
    }
}

/// Say once per process what was skipped and how to run it (or fail, when
/// the tests are required). Written past the test harness's capture, so
/// the line shows in a passing run.
pub fn skip(why: &str) {
    if std::env::var_os(REQUIRED_VAR).is_some() {
        panic!("the PostgreSQL tests are required ({REQUIRED_VAR} is set) but cannot run: {why}");
    }
    static SAID: Once = Once::new();
    SAID.call_once(|| {
        let _ = writeln!(
            std::io::stderr(),
            "skipped: the PostgreSQL store tests ({why}); to run them set {URL_VAR}=postgres://user@host/db or install \
             PostgreSQL (scripts/check_postgres.sh does both)"
        );
    });
}

/// A URL to a schema of its own on `base`: tests never see each other's
/// tables, and may break theirs.
pub async fn fresh_url(base: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let schema =
        format!("t_{}_{}_{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed), nanos % 1_000_000_000);
    let (client, connection) =
        tokio_postgres::connect(base, tokio_postgres::NoTls).await.unwrap_or_else(|e| panic!("connect to {base}: {e}"));
    let task = tokio::spawn(connection);
    client.batch_execute(&format!("CREATE SCHEMA {schema}")).await.expect("create a schema");
    drop(client);
    let _ = task.await;
    with_search_path(base, &schema)
}

/// `base` with its tables in `schema`.
pub fn with_search_path(base: &str, schema: &str) -> String {
    let join = if base.contains('?') { '&' } else { '?' };
    format!("{base}{join}options=-c%20search_path%3D{schema}")
}

/// The directory holding `initdb`, `pg_ctl` and `postgres`.
fn binaries() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    versions.sort();
    dirs.extend(versions.into_iter().rev());
    dirs.push(PathBuf::from("/usr/local/bin"));
    dirs.into_iter().find_map(|dir| {
        // Debian links some binaries into PATH; the others sit beside the target.
        let initdb = std::fs::canonicalize(dir.join("initdb")).ok()?;
        let bin = initdb.parent()?.to_path_buf();
        (bin.join("pg_ctl").exists() && bin.join("postgres").exists()).then_some(bin)
    })
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false)
}

/// A private server in a temporary directory.
pub struct Private {
    /// `postgres://toolreg@127.0.0.1:PORT/postgres`.
    pub url: String,
    /// The same server over its Unix socket.
    pub socket_url: String,
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    as_nobody: bool,
    /// Closing it stops the server and removes its directory.
    _watchdog: ChildStdin,
}

impl Private {
    /// Start one (`durable`: with `fsync` on, as a real server runs).
    pub fn start(durable: bool) -> Result<Private, String> {
        let bin = binaries().ok_or("no PostgreSQL server binaries (initdb, pg_ctl, postgres) found")?;
        let as_nobody = is_root();
        let dir = tempfile::Builder::new().prefix("toolreg-pg-").tempdir().map_err(|e| e.to_string())?.keep();
        if as_nobody {
            let ok = Command::new("chown").arg("nobody").arg(&dir).status().map(|s| s.success()).unwrap_or(false);
            if !ok {
                return Err("running as root, and the server's directory cannot be given to `nobody`".into());
            }
        }
        let data = dir.join("data");
        let port = free_port()?;
        let server = Private {
            url: format!("postgres://toolreg@127.0.0.1:{port}/postgres"),
            socket_url: format!("postgres:///postgres?user=toolreg&host={}&port={port}", dir.display()),
            _watchdog: watchdog(&bin, &dir, &data, as_nobody)?,
            bin,
            data,
            port,
            as_nobody,
        };
        let out = server
            .command("initdb")
            .args(["-U", "toolreg", "--auth=trust", "-E", "UTF8", "--no-sync", "-D"])
            .arg(&server.data)
            .output()
            .map_err(|e| format!("initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!("initdb failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        let fsync = if durable { "on" } else { "off" };
        let options = format!("-h 127.0.0.1 -p {port} -k {} -c fsync={fsync} -c max_connections=200", dir.display());
        std::fs::write(dir.join("options"), &options).map_err(|e| e.to_string())?;
        server.resume()?;
        Ok(server)
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_nobody {
            let mut command = Command::new("runuser");
            command.args(["-u", "nobody", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        }
    }

    /// Stop the server (fast shutdown: sessions are ended).
    pub fn stop(&self) {
        let _ = self.command("pg_ctl").args(["-m", "fast", "-w", "stop", "-D"]).arg(&self.data).output();
    }

    /// Start it again on the same port.
    pub fn resume(&self) -> Result<(), String> {
        let dir = self.data.parent().unwrap_or(Path::new("/"));
        let options = std::fs::read_to_string(dir.join("options")).map_err(|e| e.to_string())?;
        let out = self
            .command("pg_ctl")
            .args(["-w", "-t", "60", "-l"])
            .arg(dir.join("log"))
            .arg("-o")
            .arg(options)
            .arg("-D")
            .arg(&self.data)
            .arg("start")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("pg_ctl: {e}"))?;
        if !out.status.success() {
            let log = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
            return Err(format!("pg_ctl start failed: {} {log}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        // Ready means accepting connections.
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if Instant::now() > deadline {
                return Err("the server did not listen within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }
}

/// A shell that waits for its standard input to close, then stops the
/// server and removes its directory.
fn watchdog(bin: &Path, dir: &Path, data: &Path, as_nobody: bool) -> Result<ChildStdin, String> {
    let script = r#"cat >/dev/null; "$1/pg_ctl" -m immediate -w stop -D "$3" >/dev/null 2>&1; rm -rf "$2""#;
    let mut command = if as_nobody {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--", "sh", "-c", script, "sh"]);
        c
    } else {
        let mut c = Command::new("sh");
        c.args(["-c", script, "sh"]);
        c
    };
    let mut child = command
        .arg(bin)
        .arg(dir)
        .arg(data)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("start the watchdog: {e}"))?;
    child.stdin.take().ok_or_else(|| "the watchdog has no stdin".to_owned())
}

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}
