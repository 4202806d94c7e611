//! File tools beyond the recorded cases: concurrent edits of one file, argument preparation,
//! abort, and the tool set.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use pi_agent::ToolInvocation;
use pi_js::json::to_js_string;
use pi_tools::{ToolsConfig, all_tool_names, build, build_tool, prepare_edit_arguments};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

fn invocation(args: Value) -> ToolInvocation {
    ToolInvocation {
        tool_call_id: "c".into(),
        args: args.as_object().cloned().unwrap_or_else(Map::new),
        cancel: CancellationToken::new(),
        updates: Arc::new(|_| {}),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_edits_of_one_file_all_apply() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (0..40).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("f.txt"), &lines).unwrap();
    let edit = build_tool("edit", &Arc::new(ToolsConfig::new(dir.path(), dir.path()))).unwrap();
    let runs: Vec<_> = (0..40)
        .map(|i| {
            let args = json!({"path": "f.txt", "edits": [{"oldText": format!("line {i}\n"), "newText": format!("LINE {i}\n")}]});
            tokio::spawn(edit.execute(invocation(args)))
        })
        .collect();
    for run in runs {
        run.await.unwrap().unwrap();
    }
    let expected: String = (0..40).map(|i| format!("LINE {i}\n")).collect();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        expected
    );
}

#[test]
fn edit_arguments_are_prepared_like_pi() {
    let legacy = prepare_edit_arguments(json!({"path": "a", "oldText": "x", "newText": "y"}));
    assert_eq!(
        to_js_string(&legacy).unwrap(),
        r#"{"path":"a","edits":[{"oldText":"x","newText":"y"}]}"#
    );
    let text = prepare_edit_arguments(
        json!({"edits": "[{\"oldText\":\"a\",\"newText\":\"b\"}]", "path": "p"}),
    );
    assert_eq!(
        to_js_string(&text).unwrap(),
        r#"{"edits":[{"oldText":"a","newText":"b"}],"path":"p"}"#
    );
    let single =
        prepare_edit_arguments(json!({"path": "p", "edits": {"oldText": "a", "newText": "b"}}));
    assert_eq!(
        to_js_string(&single).unwrap(),
        r#"{"path":"p","edits":[{"oldText":"a","newText":"b"}]}"#
    );
    let both = prepare_edit_arguments(
        json!({"edits": [{"oldText": "a", "newText": "b"}], "path": "p", "oldText": "c", "newText": "d"}),
    );
    assert_eq!(
        to_js_string(&both).unwrap(),
        r#"{"edits":[{"oldText":"a","newText":"b"},{"oldText":"c","newText":"d"}],"path":"p"}"#
    );
}

#[tokio::test]
async fn an_aborted_call_does_not_touch_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let write = build_tool("write", &Arc::new(ToolsConfig::new(dir.path(), dir.path()))).unwrap();
    let inv = invocation(json!({"path": "x.txt", "content": "data"}));
    inv.cancel.cancel();
    assert_eq!(write.execute(inv).await.unwrap_err().0, "Operation aborted");
    assert!(!dir.path().join("x.txt").exists());
}

#[test]
fn the_tool_set_is_built_by_name_in_order() {
    assert_eq!(
        all_tool_names(),
        [
            "read",
            "bash",
            "powershell",
            "edit",
            "write",
            "grep",
            "find",
            "ls"
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    let tools = build(
        &["ls", "read", "bash"],
        ToolsConfig::new(dir.path(), dir.path()),
    )
    .unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["ls", "read", "bash"]);
    assert_eq!(
        build(&["nope"], ToolsConfig::new(dir.path(), dir.path()))
            .err()
            .unwrap()
            .to_string(),
        "Unknown tool name: nope"
    );
    // Parameter schemas carry Pi's names, types and required fields.
    let read = build_tool("read", &Arc::new(ToolsConfig::new(dir.path(), dir.path()))).unwrap();
    let params = &read.declaration().parameters;
    assert_eq!(params["required"], json!(["path"]));
    assert_eq!(params["properties"]["offset"]["type"], "number");
    assert_eq!(
        to_js_string(&read.declaration().constrained_sampling).unwrap(),
        r#"{"type":"json_schema","strict":"prefer"}"#
    );
}

#[tokio::test]
async fn powershell_is_windows_only() {
    let dir = tempfile::tempdir().unwrap();
    let ps = build_tool(
        "powershell",
        &Arc::new(ToolsConfig::new(dir.path(), dir.path())),
    )
    .unwrap();
    assert_eq!(
        ps.execute(invocation(json!({"command": "dir"})))
            .await
            .unwrap_err()
            .0,
        "The powershell tool is only available on Windows."
    );
}

/// Root ignores file permissions, so this runs only for other users.
#[tokio::test]
async fn unreadable_files_fail_with_nodes_texts() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(0)
        == 0
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret.txt");
    std::fs::write(&path, "x").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    let config = Arc::new(ToolsConfig::new(dir.path(), dir.path()));
    let read = build_tool("read", &config).unwrap();
    let err = read
        .execute(invocation(json!({"path": "secret.txt"})))
        .await
        .unwrap_err()
        .0;
    assert_eq!(
        err,
        format!("EACCES: permission denied, access '{}'", path.display())
    );
    let edit = build_tool("edit", &config).unwrap();
    let args = json!({"path": "secret.txt", "edits": [{"oldText": "x", "newText": "y"}]});
    let err = edit.execute(invocation(args)).await.unwrap_err().0;
    assert_eq!(err, "Could not edit file: secret.txt. Error code: EACCES.");
}

/// Concurrent greps share the process's search threads: each still gets exactly what it gets
/// alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_greps_share_the_search_threads_and_keep_their_own_results() {
    let dir = tempfile::tempdir().unwrap();
    for f in 0..300 {
        let body = format!(
            "alpha {f}\nbeta {f}\n{}\n",
            if f % 2 == 0 { "gamma" } else { "" }
        );
        std::fs::write(dir.path().join(format!("f{f:03}.txt")), body).unwrap();
    }
    let grep = build_tool("grep", &Arc::new(ToolsConfig::new(dir.path(), dir.path()))).unwrap();
    let text = |result: pi_protocol::tool::AgentToolResult| match &result.content[0] {
        pi_protocol::UserBlock::Text(t) => t.text.clone(),
        _ => panic!("not text"),
    };
    let calls = [
        json!({"pattern": "alpha", "limit": 250}),
        json!({"pattern": "beta \\d*5\\b", "limit": 1000}),
        json!({"pattern": "gamma", "limit": 7, "context": 1}),
    ];
    let mut alone = Vec::new();
    for args in &calls {
        alone.push(text(grep.execute(invocation(args.clone())).await.unwrap()));
    }
    for _ in 0..5 {
        let (a, b, c) = tokio::join!(
            grep.execute(invocation(calls[0].clone())),
            grep.execute(invocation(calls[1].clone())),
            grep.execute(invocation(calls[2].clone())),
        );
        let together = [text(a.unwrap()), text(b.unwrap()), text(c.unwrap())];
        assert_eq!(together.as_slice(), alone.as_slice());
    }
    assert!(
        alone[0].contains("250 matches limit reached"),
        "{}",
        alone[0]
    );
    assert_eq!(
        alone[1].lines().filter(|l| l.contains(": beta")).count(),
        30
    );
}

/// The lines of a successful `grep` call's text.
async fn grep_lines(grep: &Arc<dyn pi_agent::AgentTool>, args: Value) -> Vec<String> {
    let result = grep.execute(invocation(args)).await.unwrap();
    let pi_protocol::UserBlock::Text(t) = &result.content[0] else {
        panic!("not text")
    };
    t.text.lines().map(str::to_owned).collect()
}

/// Compiled patterns are kept between calls: the same pattern with other flags is another
/// matcher, and patterns pushed out of the kept set (more than it holds) still match.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_patterns_keep_their_flags() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "Needle\nneedle\na.c\nabc\n").unwrap();
    let grep = build_tool("grep", &Arc::new(ToolsConfig::new(dir.path(), dir.path()))).unwrap();
    let matched = async |args: Value| grep_lines(&grep, args).await;
    for round in 0..3 {
        assert_eq!(
            matched(json!({"pattern": "needle"})).await,
            ["a.txt:2: needle"],
            "round {round}"
        );
        assert_eq!(
            matched(json!({"pattern": "needle", "ignoreCase": true})).await,
            ["a.txt:1: Needle", "a.txt:2: needle"],
            "round {round}"
        );
        assert_eq!(
            matched(json!({"pattern": "a.c"})).await,
            ["a.txt:3: a.c", "a.txt:4: abc"],
            "round {round}"
        );
        assert_eq!(
            matched(json!({"pattern": "a.c", "literal": true})).await,
            ["a.txt:3: a.c"],
            "round {round}"
        );
        // More distinct patterns than are kept: the ones above are compiled again next round.
        for i in 0..10 {
            assert_eq!(
                matched(json!({"pattern": format!("x{i}y")})).await,
                ["No matches found"]
            );
        }
    }
}

/// The search reads ahead by what the matches seen so far predict: a walk whose match rate
/// drops (dense files, then sparse ones) or rises (sparse, then dense) must still give the
/// first `limit` matches in walk order, and the limit notice exactly when more exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_limit_holds_when_the_match_rate_changes_along_the_walk() {
    for (name, dense_first) in [("falling", true), ("rising", false)] {
        let dir = tempfile::tempdir().unwrap();
        let mut expected = Vec::new();
        for f in 0..600 {
            let dense = (f < 40) == dense_first;
            let count = if dense { 3 } else { usize::from(f % 37 == 0) };
            let lines: Vec<String> = (0..count).map(|i| format!("needle {f} {i}")).collect();
            let body = format!("a\n{}\nb\n", lines.join("\n"));
            std::fs::write(dir.path().join(format!("f{f:03}.txt")), body).unwrap();
            expected.extend((0..count).map(|i| format!("f{f:03}.txt:{}: needle {f} {i}", i + 2)));
        }
        let grep = build_tool("grep", &Arc::new(ToolsConfig::new(dir.path(), dir.path()))).unwrap();
        for limit in [1, 7, 100, 130, expected.len(), expected.len() + 1] {
            let result = grep
                .execute(invocation(json!({"pattern": "needle", "limit": limit})))
                .await
                .unwrap();
            let pi_protocol::UserBlock::Text(text) = &result.content[0] else {
                panic!("not text")
            };
            let matches: Vec<&str> = text
                .text
                .lines()
                .filter(|l| l.contains(": needle"))
                .collect();
            assert_eq!(
                matches,
                expected[..limit.min(expected.len())],
                "{name}, limit {limit}"
            );
            let notice = text.text.contains("matches limit reached");
            assert_eq!(notice, limit < expected.len(), "{name}, limit {limit}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_reports_files_in_sorted_walk_order_and_stops_at_the_limit() {
    // Enough files for the parallel search to run ahead of the ordered report many times over.
    let dir = tempfile::tempdir().unwrap();
    for d in 0..30 {
        let sub = dir.path().join(format!("d{d:02}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..40 {
            let body = if (d + f) % 3 == 0 {
                format!("x\nneedle {d} {f}\ny\n")
            } else {
                "nothing\n".to_string()
            };
            std::fs::write(sub.join(format!("f{f:02}.txt")), body).unwrap();
        }
    }
    let grep = build_tool("grep", &Arc::new(ToolsConfig::new(dir.path(), dir.path()))).unwrap();
    let expected: Vec<String> = (0..30)
        .flat_map(|d| (0..40).map(move |f| (d, f)))
        .filter(|(d, f)| (d + f) % 3 == 0)
        .map(|(d, f)| format!("d{d:02}/f{f:02}.txt:2: needle {d} {f}"))
        .collect();
    for (limit, context) in [(1000, 0), (57, 0), (5, 1)] {
        let result = grep
            .execute(invocation(
                json!({"pattern": "needle", "limit": limit, "context": context}),
            ))
            .await
            .unwrap();
        let pi_protocol::UserBlock::Text(text) = &result.content[0] else {
            panic!("not text")
        };
        let text = text.text.clone();
        let matches: Vec<&str> = text.lines().filter(|l| l.contains(":2: needle")).collect();
        assert_eq!(
            matches,
            expected[..limit.min(expected.len())],
            "limit {limit}"
        );
    }
}

/// Search threads skip files past the one where the output must end (more matches before them
/// than the limit): whatever limit, with or without context, the result is the unlimited
/// result cut at the limit-th match, its trailing context in that file shown as context.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_output_ends_where_the_limit_falls_inside_a_file() {
    let dir = tempfile::tempdir().unwrap();
    for f in 0..160 {
        // 0 to 4 matches per file, two lines apart, files of very different sizes so that
        // the search threads finish them out of order.
        let mut lines = vec!["top".to_string(); 1 + (f * 37) % 400];
        for i in 0..f % 5 {
            lines.push(format!("needle {f} {i}"));
            lines.push("between".into());
        }
        lines.push("end".into());
        std::fs::write(dir.path().join(format!("f{f:03}.txt")), lines.join("\n")).unwrap();
    }
    let grep = build_tool("grep", &Arc::new(ToolsConfig::new(dir.path(), dir.path()))).unwrap();
    let lines = async |args: Value| grep_lines(&grep, args).await;
    for context in [0u64, 2] {
        let all = lines(json!({"pattern": "needle", "limit": 100_000, "context": context})).await;
        let total = all.iter().filter(|l| l.contains(": needle")).count();
        assert_eq!(total, (0..160).map(|f| f % 5).sum::<usize>());
        for limit in [1, 2, 3, 5, 9, 10, 41, 99, 100, total - 1] {
            let got = lines(json!({"pattern": "needle", "limit": limit, "context": context})).await;
            // The unlimited lines up to the limit-th match, then the rest of its context.
            let cut = all
                .iter()
                .enumerate()
                .filter(|(_, l)| l.contains(": needle"))
                .nth(limit - 1)
                .map(|(i, _)| i)
                .unwrap();
            let (file, number) = {
                let (file, rest) = all[cut].split_once(':').unwrap();
                let number: u64 = rest.split(':').next().unwrap().parse().unwrap();
                (file.to_string(), number)
            };
            let mut expected: Vec<String> = all[..=cut].to_vec();
            for line in &all[cut + 1..] {
                let shown = line.replacen(&format!("{file}:"), &format!("{file}-"), 1);
                let Some(rest) = shown.strip_prefix(&format!("{file}-")) else {
                    break;
                };
                let (n, text) = rest.split_once(['-', ':']).unwrap();
                let n: u64 = n.parse().unwrap();
                if n > number + context {
                    break;
                }
                expected.push(format!("{file}-{n}-{text}"));
            }
            let shown: Vec<String> = got.iter().take_while(|l| !l.is_empty()).cloned().collect();
            assert_eq!(shown, expected, "limit {limit}, context {context}");
            assert!(
                got.last()
                    .unwrap()
                    .contains(&format!("{limit} matches limit reached")),
                "limit {limit}, context {context}: {got:?}"
            );
        }
    }
}
