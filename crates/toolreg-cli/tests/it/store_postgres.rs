//! `--store postgres://…` and `TOOLREG_STORE`: two "hosts" (two working
//! directories, two processes) sharing one PostgreSQL store. Runs when a
//! server can be found, as the store's own PostgreSQL tests do.

#[path = "../../../toolreg-store/tests/it/support/postgres.rs"]
mod pg;

use assert_cmd::Command;
use serde_json::{Value, json};

fn toolreg(root: &std::path::Path) -> Command {
    let mut cmd = Command::cargo_bin("toolreg").unwrap();
    cmd.current_dir(root).env_remove("TOOLREG_STORE").env_remove("TOOLREG_MCP_TOKEN").env("NO_COLOR", "1");
    cmd
}

fn stdout(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn a_value_set_on_one_host_is_read_on_another() {
    let Some(base) = pg::base_url() else { return };
    let url = pg::fresh_url(&base).await;
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());

    let set = r#"{"key": "plan", "value": "[1, 2, 3]"}"#;
    let written: Value =
        serde_json::from_str(&stdout(toolreg(one.path()).args(["--store", &url, "call", "store_set", set]))).unwrap();
    // The other host names the store by the environment variable.
    let read = stdout(toolreg(two.path()).env("TOOLREG_STORE", &url).args(["call", "store_get", r#"{"key": "plan"}"#]));
    let read: Value = serde_json::from_str(&read).unwrap();
    assert_eq!(read["value"], json!([1, 2, 3]));
    assert_eq!(read["version"], written["version"]);
    // Neither made an SQLite file.
    assert!(!one.path().join(".toolreg/store.db").exists() && !two.path().join(".toolreg/store.db").exists());
}

#[test]
fn an_unreachable_server_is_one_line_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("postgres://toolreg:secret@127.0.0.1:{port}/toolreg");
    for by_env in [false, true] {
        let mut cmd = toolreg(dir.path());
        if by_env {
            cmd.env("TOOLREG_STORE", &url).arg("tools");
        } else {
            cmd.args(["--store", &url, "tools"]);
        }
        let out = cmd.output().unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("cannot open the store") && err.contains(&format!("127.0.0.1:{port}")), "{err}");
        assert!(!err.contains("secret"), "{err}");
    }
}
