//! Pi packages end to end: the real `pi` binary installs, updates, lists and removes npm
//! packages from a registry on 127.0.0.1 and git packages from repositories served over HTTP on
//! 127.0.0.1, with real npm and git; startup installs missing packages in RPC and print modes;
//! `-e` packages are cached. Expected texts are Pi 1.6.0's (compared side by side with the
//! reference when it is installed: `same_output_as_pi`).
//!
//! Needs `npm` and `git` on PATH (and Node 22 for the extension host's part).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use pi_test_support::TempDir;
use pi_test_support::packages::PackageServer;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

struct Env {
    tmp: TempDir,
    server: PackageServer,
    /// Whether npm may install (no `PI_OFFLINE`).
    online: bool,
}

const DEMO: &str = "pi-test-demo";

impl Env {
    fn new() -> Env {
        for tool in ["npm", "git", "tar"] {
            let found = Command::new(tool).arg("--version").output().is_ok();
            assert!(found, "`{tool}` is needed on PATH for the package tests");
        }
        let tmp = TempDir::new();
        for d in ["home", "agent", "work"] {
            tmp.mkdir(d);
        }
        let server = PackageServer::start(&tmp.path().join("server")).unwrap();
        Env {
            tmp,
            server,
            online: true,
        }
    }

    fn agent(&self) -> PathBuf {
        self.tmp.path().join("agent")
    }

    fn work(&self) -> PathBuf {
        self.tmp.path().join("work")
    }

    fn command(&self, args: &[&str]) -> Command {
        self.command_of(Path::new(env!("CARGO_BIN_EXE_pi")), &[], args)
    }

    /// `program [prefix...] args...` in the sandbox's environment.
    fn command_of(&self, program: &Path, prefix: &[&Path], args: &[&str]) -> Command {
        let mut c = Command::new(program);
        c.args(prefix)
            .args(args)
            .current_dir(self.work())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.tmp.path().join("home"))
            .env("PI_CODING_AGENT_DIR", self.agent())
            .env("npm_config_registry", self.server.registry())
            .env("npm_config_cache", self.tmp.path().join("npm-cache"))
            .env("npm_config_update_notifier", "false");
        if !self.online {
            c.env("PI_OFFLINE", "1");
        }
        c
    }

    fn pi(&self, args: &[&str]) -> Out {
        self.pi_input(args, "")
    }

    fn pi_input(&self, args: &[&str], input: &str) -> Out {
        run(self.command(args), input)
    }
}

fn run(mut command: Command, input: &str) -> Out {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl Env {
    /// `get_commands` over RPC: `(name, sourceInfo)` of each command, and the run's output.
    fn commands(&self, extra: &[&str]) -> (Vec<(String, Value)>, Out) {
        let mut args = vec![
            "--mode",
            "rpc",
            "--no-session",
            "--provider",
            "mock",
            "--model",
            "m",
        ];
        args.extend(extra);
        let out = self.pi_input(&args, "{\"type\":\"get_commands\"}\n");
        for line in out.stdout.lines() {
            serde_json::from_str::<Value>(line)
                .unwrap_or_else(|_| panic!("stdout carries only JSON: {line:?}\n{}", out.stderr));
        }
        let first: Value = serde_json::from_str(out.stdout.lines().next().unwrap_or("{}")).unwrap();
        let list = first["data"]["commands"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or("").to_string(),
                    c["sourceInfo"].clone(),
                )
            })
            .collect();
        (list, out)
    }

    fn settings(&self) -> String {
        std::fs::read_to_string(self.agent().join("settings.json")).unwrap_or_default()
    }

    fn write_settings(&self, v: Value) {
        std::fs::write(self.agent().join("settings.json"), v.to_string()).unwrap();
    }

    fn models(&self) {
        let models = json!({"providers": {"mock": {"baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions", "apiKey": "x", "models": [{"id": "m"}]}}});
        std::fs::write(self.agent().join("models.json"), models.to_string()).unwrap();
    }

    /// A package folder with a prompt, a skill and an extension; returns its path.
    fn package_dir(&self, name: &str, version: &str) -> PathBuf {
        let dir = self
            .tmp
            .path()
            .join("src")
            .join(format!("{name}-{version}"));
        let files = demo_files(name, version);
        for (rel, text) in &files {
            let p = dir.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    fn publish(&self, name: &str, version: &str) {
        self.server
            .publish(&self.package_dir(name, version))
            .unwrap();
    }

    fn installed_version(&self, root: &Path) -> String {
        let text = std::fs::read_to_string(root.join("package.json")).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()["version"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

fn demo_files(name: &str, version: &str) -> Vec<(String, String)> {
    let short = name.rsplit('/').next().unwrap_or(name);
    vec![
        (
            "package.json".into(),
            json!({"name": name, "version": version, "keywords": ["pi-package"]}).to_string(),
        ),
        (
            "prompts/review.md".into(),
            format!("---\ndescription: Review ({short} {version})\n---\nReview $@ with care.\n"),
        ),
        (
            format!("skills/{short}-skill/SKILL.md"),
            format!("---\nname: {short}-skill\ndescription: Skill of {short}\n---\nUse it.\n"),
        ),
        (
            "extensions/cmd.ts".into(),
            format!(
                "export default function (pi: any) {{\n  pi.registerCommand(\"{short}-cmd\", {{ description: \"v{version}\", handler: async () => {{}} }});\n}}\n"
            ),
        ),
    ]
}

fn git_files() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "package.json",
            r#"{"name": "git-demo", "version": "1.0.0"}"#,
        ),
        (
            "prompts/from-git.md",
            "---\ndescription: A prompt from git\n---\nFrom git: $@\n",
        ),
    ]
}

fn names(list: &[(String, Value)]) -> Vec<&str> {
    list.iter().map(|(n, _)| n.as_str()).collect()
}

fn info<'a>(list: &'a [(String, Value)], name: &str) -> &'a Value {
    &list
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{name} in {list:?}"))
        .1
}

#[test]
fn npm_install_list_update_remove() {
    let env = Env::new();
    env.publish(DEMO, "1.0.0");
    let out = env.pi(&["list"]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "No packages installed.\n")
    );

    let out = env.pi(&["install", "npm:pi-test-demo"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("Installing npm:pi-test-demo...\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.ends_with("Installed npm:pi-test-demo\n"),
        "{}",
        out.stdout
    );
    assert_eq!(
        env.settings(),
        "{\n  \"packages\": [\n    \"npm:pi-test-demo\"\n  ]\n}"
    );
    let npm_root = env.agent().join("npm");
    assert_eq!(
        std::fs::read_to_string(npm_root.join(".gitignore")).unwrap(),
        "*\n!.gitignore\n"
    );
    let installed = npm_root.join("node_modules").join(DEMO);
    assert_eq!(env.installed_version(&installed), "1.0.0");

    let out = env.pi(&["list"]);
    assert_eq!(
        out.stdout,
        format!(
            "User packages:\n  npm:pi-test-demo\n    {}\n",
            installed.display()
        )
    );

    env.publish(DEMO, "1.1.0");
    let out = env.pi(&["update", "--extensions"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("Updating npm:pi-test-demo...\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .ends_with("Updated 1 package:\n  npm:pi-test-demo 1.0.0 -> 1.1.0\n"),
        "{}",
        out.stdout
    );
    assert_eq!(env.installed_version(&installed), "1.1.0");
    let out = env.pi(&["update", "--extensions"]);
    assert_eq!(out.stdout, "Packages are already up to date\n");
    let out = env.pi(&["update", "npm:pi-test-demo"]);
    assert_eq!(out.stdout, "npm:pi-test-demo is already up to date\n");
    let out = env.pi(&["update", "pi-test-demo"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "Error: No matching package found for pi-test-demo. Did you mean npm:pi-test-demo?\n"
        )
    );

    let out = env.pi(&["uninstall", "npm:pi-test-demo"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("Removing npm:pi-test-demo...\n"));
    assert!(out.stdout.ends_with("Removed npm:pi-test-demo\n"));
    assert_eq!(env.settings(), "{\n  \"packages\": []\n}");
    assert!(!installed.exists());
    let out = env.pi(&["remove", "npm:pi-test-demo"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "No matching package found for npm:pi-test-demo\n")
    );
}

#[test]
fn pinned_npm_versions_stay_and_settings_keep_other_keys() {
    let env = Env::new();
    env.publish(DEMO, "1.0.0");
    env.publish(DEMO, "1.1.0");
    std::fs::write(
        env.agent().join("settings.json"),
        "{\"theme\": \"dark\", \"packages\": [{\"source\": \"npm:pi-test-demo\", \"skills\": []}]}",
    )
    .unwrap();
    // The same package pinned: the entry keeps its filters, its source changes.
    let out = env.pi(&["install", "npm:pi-test-demo@1.0.0"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        env.settings(),
        "{\n  \"theme\": \"dark\",\n  \"packages\": [\n    {\n      \"source\": \"npm:pi-test-demo@1.0.0\",\n      \"skills\": []\n    }\n  ]\n}"
    );
    let installed = env.agent().join("npm/node_modules").join(DEMO);
    assert_eq!(env.installed_version(&installed), "1.0.0");
    let out = env.pi(&["update", "--extensions"]);
    assert_eq!(out.stdout, "Packages are already up to date\n");
    assert_eq!(env.installed_version(&installed), "1.0.0");
    let out = env.pi(&["list"]);
    assert_eq!(
        out.stdout,
        format!(
            "User packages:\n  npm:pi-test-demo@1.0.0 (filtered)\n    {}\n",
            installed.display()
        )
    );
}

#[test]
fn git_install_update_pin_and_remove() {
    let env = Env::new();
    let url = env.server.git_repo("o", "demo", &git_files()).unwrap();
    let out = env.pi(&["install", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with(&format!("Installing {url}...\n")));
    assert!(out.stdout.ends_with(&format!("Installed {url}\n")));
    let checkout = env.agent().join("git/127.0.0.1/git/o/demo");
    assert!(checkout.join("prompts/from-git.md").exists());
    assert_eq!(
        std::fs::read_to_string(env.agent().join("git/.gitignore")).unwrap(),
        "*\n!.gitignore\n"
    );
    let head = |dir: &Path| {
        let out = Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(dir)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let v1 = head(&checkout);

    let v2 = env
        .server
        .git_commit("o", "demo", &[("prompts/second.md", "second\n")], "v2")
        .unwrap();
    let out = env.pi(&["update", "--extensions"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.ends_with(&format!(
            "Updated 1 package:\n  {url} {} -> {}\n",
            &v1[..7],
            &v2[..7]
        )),
        "{}",
        out.stdout
    );
    assert_eq!(head(&checkout), v2);

    // A ref pins the checkout; updates reconcile to it.
    let pinned = format!("{url}@v1");
    let out = env.pi(&["install", &pinned]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(head(&checkout), v1);
    assert!(env.settings().contains(&pinned));
    let out = env.pi(&["update", "--extensions"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.ends_with("Packages are already up to date\n"),
        "{}",
        out.stdout
    );
    assert_eq!(head(&checkout), v1);

    let out = env.pi(&["remove", "git:127.0.0.1/git/o/demo"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!checkout.exists());
    // Emptied parent folders go too.
    assert!(!env.agent().join("git/127.0.0.1").exists());
    assert_eq!(env.settings(), "{\n  \"packages\": []\n}");

    let missing = env.server.git_url("o", "missing");
    let out = env.pi(&["install", &missing]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.ends_with(&format!(
            "Error: git clone {missing} {} failed with code 128\n",
            env.agent().join("git/127.0.0.1/git/o/missing").display()
        )),
        "{}",
        out.stderr
    );
}

#[test]
fn startup_installs_missing_packages_over_rpc() {
    let env = Env::new();
    env.models();
    env.publish(DEMO, "1.0.0");
    let url = env.server.git_repo("o", "demo", &git_files()).unwrap();
    env.write_settings(json!({"packages": [format!("npm:{DEMO}"), url]}));

    let (list, out) = env.commands(&[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // npm and git talked on stderr; stdout stayed JSON.
    assert!(out.stderr.contains("added 1 package"), "{}", out.stderr);
    assert!(out.stderr.contains("Cloning into"), "{}", out.stderr);
    let npm_root = env.agent().join("npm/node_modules").join(DEMO);
    assert_eq!(
        info(&list, "review"),
        &json!({"path": npm_root.join("prompts/review.md"), "source": "npm:pi-test-demo",
            "scope": "user", "origin": "package", "baseDir": npm_root})
    );
    let checkout = env.agent().join("git/127.0.0.1/git/o/demo");
    assert_eq!(info(&list, "from-git")["baseDir"], json!(checkout));
    assert_eq!(
        info(&list, "skill:pi-test-demo-skill")["source"],
        "npm:pi-test-demo"
    );
    if node_available() {
        assert_eq!(
            info(&list, "pi-test-demo-cmd")["path"],
            json!(npm_root.join("extensions/cmd.ts"))
        );
    }

    // Installed now: the next start does not install again.
    let (again, out) = env.commands(&[]);
    assert_eq!(names(&again), names(&list));
    assert!(!out.stderr.contains("added"), "{}", out.stderr);
}

#[test]
fn a_package_that_fails_to_install_is_skipped_with_a_warning() {
    let env = Env::new();
    env.models();
    env.publish(DEMO, "1.0.0");
    env.write_settings(json!({"packages": ["npm:pi-test-missing", format!("npm:{DEMO}")]}));
    let (list, out) = env.commands(&[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let warning = format!(
        "Warning: Extension package \"npm:pi-test-missing\": failed to install (npm install pi-test-missing --prefix {} --legacy-peer-deps --no-audit --no-fund failed with code 1). Run \"pi remove npm:pi-test-missing\" to remove it from settings.json.\n",
        env.agent().join("npm").display()
    );
    assert!(out.stderr.ends_with(&warning), "{}", out.stderr);
    assert!(names(&list).contains(&"review"));

    // Offline nothing is tried: no warning.
    let mut offline = env;
    offline.online = false;
    let (_, out) = offline.commands(&[]);
    assert!(!out.stderr.contains("Warning"), "{}", out.stderr);
}

#[test]
fn temporary_packages_from_the_command_line() {
    let env = Env::new();
    env.models();
    env.publish(DEMO, "1.0.0");
    let (list, out) = env.commands(&["-e", "npm:pi-test-demo"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let cache = env.agent().join("tmp/extensions/npm");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1);
    let root = dirs[0].join("node_modules").join(DEMO);
    assert_eq!(env.installed_version(&root), "1.0.0");
    // Prompts keep the package, skills count as `cli`; settings stay untouched.
    assert_eq!(
        info(&list, "review"),
        &json!({"path": root.join("prompts/review.md"), "source": "npm:pi-test-demo",
            "scope": "temporary", "origin": "package", "baseDir": root})
    );
    assert_eq!(
        info(&list, "skill:pi-test-demo-skill"),
        &json!({"path": root.join("skills/pi-test-demo-skill/SKILL.md"), "source": "cli",
            "scope": "temporary", "origin": "top-level"})
    );
    assert_eq!(env.settings(), "");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(env.agent().join("tmp/extensions"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    // A newer version is picked up on the next start (the spec is not pinned).
    env.publish(DEMO, "1.1.0");
    let (list, out) = env.commands(&["-e", "npm:pi-test-demo"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(env.installed_version(&root), "1.1.0");
    assert!(
        info(&list, "review")["path"]
            .as_str()
            .unwrap()
            .starts_with(&dirs[0].display().to_string())
    );

    // git: cloned once, refreshed when the branch moves.
    let url = env.server.git_repo("o", "demo", &git_files()).unwrap();
    let (list, out) = env.commands(&["-e", &url]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(names(&list).contains(&"from-git"));
    env.server
        .git_commit(
            "o",
            "demo",
            &[(
                "prompts/later.md",
                "---\ndescription: Added later\n---\nlater\n",
            )],
            "v2",
        )
        .unwrap();
    let (list, _) = env.commands(&["-e", &url]);
    assert!(names(&list).contains(&"later"), "{list:?}");
    // A failing source is reported with the temporary hint.
    let (_, out) = env.commands(&["-e", "npm:pi-test-missing"]);
    assert!(
        out.stderr
            .contains("Warning: Extension package \"npm:pi-test-missing\": failed to install (")
            && out.stderr.ends_with(". Check the source and try again.\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn print_mode_installs_and_expands_a_package_prompt() {
    let env = Env::new();
    env.publish(DEMO, "1.0.0");
    env.write_settings(json!({"packages": [format!("npm:{DEMO}")]}));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt
        .block_on(pi_test_support::mock::MockLlm::start(vec![
            serde_json::from_value(json!({"text": "done"})).unwrap(),
        ]))
        .unwrap();
    let models = json!({"providers": {"mock": {"baseUrl": format!("http://127.0.0.1:{}/v1", mock.port()),
        "api": "openai-completions", "apiKey": "x", "models": [{"id": "m"}]}}});
    std::fs::write(env.agent().join("models.json"), models.to_string()).unwrap();
    let out = env.pi(&[
        "-p",
        "--no-session",
        "--provider",
        "mock",
        "--model",
        "m",
        "/review the parser",
    ]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "done\n"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("added 1 package"), "{}", out.stderr);
    let body = mock.requests()[0].body.to_string();
    assert!(body.contains("Review the parser with care."), "{body}");
}

#[test]
fn project_packages_need_trust() {
    let env = Env::new();
    let pkg = env.work().join("localpkg");
    std::fs::create_dir_all(pkg.join("prompts")).unwrap();
    std::fs::write(pkg.join("prompts/p.md"), "p\n").unwrap();
    std::fs::create_dir_all(env.work().join(".pi")).unwrap();
    std::fs::write(env.work().join(".pi/settings.json"), "{}").unwrap();
    let out = env.pi(&["install", "-l", "./localpkg"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "Project is not trusted. Use --approve to modify local package config.\n"
        )
    );
    let out = env.pi(&["install", "-l", "--approve", "./localpkg"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "Installing ./localpkg...\nInstalled ./localpkg\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.work().join(".pi/settings.json")).unwrap(),
        "{\n  \"packages\": [\n    \"../localpkg\"\n  ]\n}"
    );
    assert_eq!(env.pi(&["list"]).stdout, "No packages installed.\n");
    assert_eq!(
        env.pi(&["list", "--approve"]).stdout,
        format!("Project packages:\n  ../localpkg\n    {}\n", pkg.display())
    );
    let out = env.pi(&["remove", "-l", "-a", "./localpkg"]);
    assert_eq!(out.stdout, "Removing ./localpkg...\nRemoved ./localpkg\n");
}

#[test]
fn the_npm_command_setting_runs_installs() {
    let env = Env::new();
    env.publish(DEMO, "1.0.0");
    // A wrapper that logs its arguments, then runs npm against the test registry.
    let log = env.tmp.path().join("npm-args.log");
    let wrapper = env.tmp.write(
        "bin/npm-wrapper",
        &format!(
            "#!/bin/sh\necho \"$@\" >> {}\nexec npm --registry {} \"$@\"\n",
            log.display(),
            env.server.registry()
        ),
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    env.write_settings(json!({"npmCommand": [wrapper.to_string_lossy()]}));
    let out = env.pi(&["install", "npm:pi-test-demo"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let args = std::fs::read_to_string(&log).unwrap();
    let root = std::fs::canonicalize(env.agent().join("npm")).unwrap();
    assert_eq!(
        args.lines().last().unwrap(),
        format!(
            "install pi-test-demo --prefix {} --legacy-peer-deps --no-audit --no-fund",
            root.display()
        )
    );
}

#[test]
fn argument_errors_read_like_pi() {
    let env = Env::new();
    let cases: [(&[&str], &str); 8] = [
        (
            &["install"],
            "Missing install source.\nUsage: pi install <source> [-l] [--approve|--no-approve]\n",
        ),
        (
            &["list", "-l"],
            "Unknown option -l for \"list\".\nUse \"pi --help\" or \"pi list [--approve|--no-approve]\".\n",
        ),
        (
            &["list", "a", "b"],
            "Unexpected argument b.\nUsage: pi list [--approve|--no-approve]\n",
        ),
        (
            &["remove", "--self", "x"],
            "Unknown option --self for \"remove\".\nUse \"pi --help\" or \"pi remove <source> [-l] [--approve|--no-approve]\".\n",
        ),
        (
            &["update", "--extension"],
            "Missing value for --extension.\nUsage: pi update [source|self|pi] [--self|--extensions|--models|--all] [--extension <source>] [--approve|--no-approve] [--force]\n",
        ),
        (
            &["update", "--all", "--self"],
            "--all cannot be combined with --self, --extensions, --models, or --extension\nUsage: pi update [source|self|pi] [--self|--extensions|--models|--all] [--extension <source>] [--approve|--no-approve] [--force]\n",
        ),
        (
            &["update", "x", "--extensions"],
            "positional update targets cannot be combined with --self, --extensions, or --all\nUsage: pi update [source|self|pi] [--self|--extensions|--models|--all] [--extension <source>] [--approve|--no-approve] [--force]\n",
        ),
        (
            &["update", "--extension", "a", "--extension", "b"],
            "--extension can only be provided once\nUsage: pi update [source|self|pi] [--self|--extensions|--models|--all] [--extension <source>] [--approve|--no-approve] [--force]\n",
        ),
    ];
    for (args, stderr) in cases {
        let out = env.pi(args);
        assert_eq!((out.code, out.stderr.as_str()), (1, stderr), "{args:?}");
        assert_eq!(out.stdout, "");
    }
    let out = env.pi(&["install", "--help"]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.starts_with("Usage:\n  pi install <source> [-l] [--approve|--no-approve]\n\nInstall a package and add it to settings.\n"));
    // Updating this program is not done here; the command says how instead.
    let out = env.pi(&["update"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stdout,
        "Extensions are skipped. Run pi update --extensions to update extensions.\n"
    );
    assert!(
        out.stderr
            .starts_with("error: pi cannot self-update this installation.\n")
    );
    assert!(
        out.stderr
            .contains("cargo build --release -p pi-coding-agent")
    );
}

fn node_available() -> bool {
    Command::new("node")
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim_start_matches('v')
                .split('.')
                .next()
                .and_then(|m| m.parse::<u32>().ok())
                .unwrap_or(0)
                >= 22
        })
        .unwrap_or(false)
}

/// The reference's CLI, when `conformance/.reference` has it (not in CI).
fn reference() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/.reference");
    let cli = root.join("pi16/node_modules/@earendil-works/pi-coding-agent/dist/cli.js");
    cli.exists().then_some(cli)
}

/// The same command sequence run by Pi 1.6.0 and by us, in fresh sandboxes against the same
/// servers, prints the same (npm's timings aside) and leaves the same settings.
#[test]
fn same_output_as_pi() {
    let Some(cli) = reference() else {
        eprintln!("skipped: the reference is not installed (conformance/record installs it)");
        return;
    };
    let node = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conformance/.reference/node22/package/bin/node");
    let pi = |env: &Env, use_ref: bool, args: &[&str]| -> Out {
        if use_ref {
            run(env.command_of(&node, &[cli.as_path()], args), "")
        } else {
            env.pi(args)
        }
    };
    let transcript = |use_ref: bool| -> String {
        let env = Env::new();
        env.publish(DEMO, "1.0.0");
        let url = env.server.git_repo("o", "demo", &git_files()).unwrap();
        let steps: Vec<Vec<String>> = vec![
            vec!["list".into()],
            vec!["install".into(), "npm:pi-test-demo".into()],
            vec!["install".into(), url.clone()],
            vec!["install".into(), "npm:pi-test-demo@^1".into()],
            vec!["list".into()],
            vec!["update".into(), "--extensions".into()],
            vec!["update".into(), "pi-test-demo".into()],
            vec!["remove".into(), url.clone()],
            vec!["remove".into(), "npm:nothing-here".into()],
            vec!["install".into(), "./nope".into()],
            vec!["list".into()],
        ];
        let mut text = String::new();
        for step in &steps {
            let args: Vec<&str> = step.iter().map(String::as_str).collect();
            let out = pi(&env, use_ref, &args);
            text.push_str(&format!(
                "$ pi {}\n{}{}exit {}\n",
                step.join(" "),
                out.stdout,
                out.stderr,
                out.code
            ));
        }
        text.push_str(&env.settings());
        let root = env.tmp.path().display().to_string();
        let port = env.server.port().to_string();
        without_timings(&text.replace(&root, "<root>").replace(&port, "<port>"))
    };
    assert_eq!(transcript(false), transcript(true));
}

/// npm's `in 512ms`/`in 1s` timings differ between runs.
fn without_timings(text: &str) -> String {
    text.lines()
        .map(|l| match l.rfind(" in ") {
            Some(i)
                if l[i + 4..].ends_with('s')
                    && l[i + 4..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_digit()) =>
            {
                format!("{} in <time>", &l[..i])
            }
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `pi config` without a terminal applies the keys on stdin (as Pi does) and prints the list;
/// the settings it writes are the ones Pi 1.6.0 wrote for the same keys.
#[test]
fn config_applies_keys_from_stdin() {
    let env = Env::new();
    let agent = env.agent();
    let lp = env.tmp.path().join("lp");
    for (rel, text) in [
        ("extensions/a.ts", "export default function () {}\n"),
        (
            "skills/ls/SKILL.md",
            "---\nname: ls\ndescription: d\n---\nx\n",
        ),
        ("prompts/lp.md", "---\ndescription: x\n---\nx\n"),
    ] {
        let p = lp.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::create_dir_all(agent.join("extensions")).unwrap();
    std::fs::write(
        agent.join("extensions/mine.ts"),
        "export default function () {}\n",
    )
    .unwrap();
    std::fs::create_dir_all(agent.join("prompts")).unwrap();
    std::fs::write(agent.join("prompts/p1.md"), "---\ndescription: x\n---\nx\n").unwrap();
    env.write_settings(json!({"packages": ["../lp"]}));

    let out = run(
        env.command(&["config"]),
        " \x1b[B \x1b[B\x1b[B\x1b[B \x1b[B\x1b[B \x1b",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        serde_json::from_str::<Value>(&env.settings()).unwrap(),
        json!({"packages": [{"source": "../lp", "extensions": ["-extensions/a.ts"],
            "skills": ["-skills/ls/SKILL.md"]}], "prompts": ["-prompts/p1.md"],
            "extensions": ["-builtin:llama.cpp"]})
    );
    assert!(out.stdout.contains("Global Resources"), "{}", out.stdout);
    assert!(out.stdout.contains("      [ ] a.ts\n"), "{}", out.stdout);
    assert!(
        out.stdout.contains(">     [ ] llama.cpp\n"),
        "{}",
        out.stdout
    );

    // Project mode cycles overrides; tab switches back to the user's settings.
    std::fs::create_dir_all(env.work().join(".pi")).unwrap();
    std::fs::write(env.work().join(".pi/settings.json"), "{}").unwrap();
    let out = env.pi(&["config", "-l"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "Project is not trusted. Use --approve to modify local resource config.\n"
        )
    );
    let out = run(
        env.command(&["config", "-l", "-a"]),
        " \x1b[B \x1b[B \t \x1b[B\x1b[B ",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let project: Value = serde_json::from_str(
        &std::fs::read_to_string(env.work().join(".pi/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        project,
        json!({"packages": [{"source": "../../lp", "autoload": false,
            "extensions": ["+extensions/a.ts"], "skills": ["+skills/ls/SKILL.md"],
            "prompts": ["-prompts/lp.md"]}]})
    );
    assert_eq!(
        serde_json::from_str::<Value>(&env.settings()).unwrap()["packages"],
        json!([{"source": "../lp", "extensions": ["+extensions/a.ts"],
            "skills": ["-skills/ls/SKILL.md"], "prompts": ["-prompts/lp.md"]}])
    );
}
