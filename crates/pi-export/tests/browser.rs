//! Loads the exported hostile fixture in headless Chromium and checks, on the DOM the browser
//! built, that the conversation is there and that no payload ran. Each payload, if it ran,
//! would set the title to `PW`+`NED` or add an element with id `pw`+`ned-…`; the markers are
//! concatenated so they appear only through execution. Control pages prove the harness sees
//! execution when it happens, and that our CSP alone stops it.
//!
//! Skips (passing, with a message) when `/usr/bin/chromium` (or `$PI_EXPORT_CHROMIUM`) is
//! absent. Set `PI_EXPORT_SCREENSHOT=<file.png>` to also save a screenshot of the page.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{assert_inert, render_fixture};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chromium_path() -> PathBuf {
    std::env::var_os("PI_EXPORT_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}
const TIMEOUT: Duration = Duration::from_secs(60);

/// Runs Chromium headless on `page` with `extra` flags and a fresh profile; returns stdout.
fn chromium(dir: &Path, page: &Path, extra: &[&str]) -> String {
    let profile = dir.join(format!(
        "profile-{}",
        page.file_stem().unwrap().to_string_lossy()
    ));
    let mut child = Command::new(chromium_path())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
        text
    });
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(
                status.success(),
                "chromium failed on {}: {status}",
                page.display()
            );
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium took more than {TIMEOUT:?} on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    reader.join().unwrap()
}

fn dump_dom(dir: &Path, page: &Path) -> String {
    chromium(dir, page, &["--dump-dom"])
}

fn executed(dom: &str) -> bool {
    dom.to_ascii_lowercase().contains("pwned")
}

const CONTROL_BODY: &str = r#"<body><p>control</p>
<script>document.title='PW'+'NED'</script>
<img src=x onerror="document.body.appendChild(document.createElement('div')).id='pw'+'ned-img'">
</body></html>"#;

#[test]
fn hostile_payloads_do_not_run_in_chromium() {
    let browser = chromium_path();
    if !browser.exists() {
        eprintln!(
            "SKIPPED hostile_payloads_do_not_run_in_chromium: {} not found (apt-get install chromium)",
            browser.display()
        );
        return;
    }
    let started = Instant::now();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pi-export-browser");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    let html = render_fixture();
    let csp_meta = format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n",
        pi_export::CONTENT_SECURITY_POLICY
    );
    assert!(html.contains(&csp_meta));
    let pages = [
        ("page.html", html.clone()),
        // Without the CSP, escaping alone must keep everything inert.
        ("page-no-csp.html", html.replace(&csp_meta, "")),
        (
            "control.html",
            format!("<!DOCTYPE html><html><head><title>control</title></head>{CONTROL_BODY}"),
        ),
        (
            "control-csp.html",
            format!(
                "<!DOCTYPE html><html><head>{csp_meta}<title>control</title></head>{CONTROL_BODY}"
            ),
        ),
    ];
    let doms: Vec<(&str, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = pages
            .iter()
            .map(|(name, content)| {
                let path = dir.join(name);
                std::fs::write(&path, content).unwrap();
                let dir = &dir;
                (*name, s.spawn(move || dump_dom(dir, &path)))
            })
            .collect();
        handles
            .into_iter()
            .map(|(n, h)| (n, h.join().unwrap()))
            .collect()
    });

    for (name, dom) in &doms {
        match *name {
            "control.html" => {
                assert!(
                    dom.contains("<title>PWNED</title>"),
                    "harness missed a script: {dom}"
                );
                assert!(
                    dom.contains("id=\"pwned-img\""),
                    "harness missed an event handler: {dom}"
                );
            }
            "control-csp.html" => assert!(!executed(dom), "our CSP let a script run: {dom}"),
            _ => {
                assert!(!executed(dom), "a payload ran in {name}");
                assert_inert(dom);
                for text in [
                    "I'll run the failing test first.",
                    "Running the full suite now.",
                    "Actually, first check the git log &lt;script&gt;document.title='PW'+'NED'&lt;/script&gt;",
                    "<title>Fix parser &lt;/title&gt;&lt;script&gt;document.title='PW'+'NED'&lt;/script&gt; · pi session</title>",
                    "line\u{2028}separator\u{2029}paragraph",
                ] {
                    assert!(dom.contains(text), "{name}: missing {text:?}");
                }
            }
        }
    }

    if let Some(shot) = std::env::var_os("PI_EXPORT_SCREENSHOT") {
        let shot = PathBuf::from(shot);
        let flag = format!("--screenshot={}", shot.display());
        chromium(
            &dir,
            &dir.join("page.html"),
            &[&flag, "--window-size=1200,1600"],
        );
        assert!(shot.exists());
        eprintln!("screenshot: {}", shot.display());
    }
    eprintln!("chromium checks took {:?}", started.elapsed());
}
