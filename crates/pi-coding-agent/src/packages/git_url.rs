//! Git package sources (`git:github.com/user/repo@v1`, `https://…`, `git@host:user/repo`), read
//! the way Pi 1.6.0 reads them: the repository to clone, the host and `owner/repo` path that
//! name its install folder and identity, and the ref after `@` (or `#`).
//!
//! Pi hands well-known hosts (GitHub, GitLab, Bitbucket, sourcehut) to the `hosted-git-info`
//! package first, which also understands `user/repo` as a GitHub shorthand and `/tree/<ref>`
//! URLs; [`hosted`] reproduces the part of it these sources reach. Other hosts are parsed
//! generically: `host/path` needs a dot in the host (or `localhost`) and becomes an `https://`
//! URL, protocol URLs keep their scheme and port.

use url::Url;

/// A parsed git source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSource {
    /// What `git clone` is given.
    pub repo: String,
    /// Host name (no port): the first folder of the install path.
    pub host: String,
    /// `owner/repo` (more segments allowed), without `.git`.
    pub path: String,
    /// Branch, tag or commit to check out.
    pub git_ref: Option<String>,
    /// A source with a ref is pinned: updates reconcile to it but do not move it.
    pub pinned: bool,
}

/// Pi's `parseGitUrl`: with a `git:` prefix every shorthand is accepted, without one only
/// `http(s)://`, `ssh://` and `git://` URLs.
pub fn parse_git_url(source: &str) -> Option<GitSource> {
    let trimmed = pi_js::trim(source);
    let has_prefix = trimmed.starts_with("git:");
    let url = if has_prefix {
        pi_js::trim(&trimmed[4..])
    } else {
        trimmed
    };
    if !has_prefix && !has_protocol(url) {
        return None;
    }
    let split = split_ref(url);
    let mut candidates = Vec::new();
    if let Some(r) = &split.git_ref {
        candidates.push(format!("{}#{r}", split.repo));
    }
    candidates.push(url.to_string());
    for candidate in &candidates {
        if let Some(info) = hosted(candidate) {
            if split.git_ref.is_some() && info.project.contains('@') {
                continue;
            }
            let explicit = ["http://", "https://", "ssh://", "git://", "git@"]
                .iter()
                .any(|p| split.repo.starts_with(p));
            let repo = if explicit {
                split.repo.clone()
            } else {
                format!("https://{}", split.repo)
            };
            return build(
                repo,
                info.domain.to_string(),
                format!("{}/{}", info.user, info.project),
                info.committish.or(split.git_ref.clone()),
            );
        }
    }
    let mut candidates = Vec::new();
    if let Some(r) = &split.git_ref {
        candidates.push(format!("https://{}#{r}", split.repo));
    }
    candidates.push(format!("https://{url}"));
    for candidate in &candidates {
        if let Some(info) = hosted(candidate) {
            if split.git_ref.is_some() && info.project.contains('@') {
                continue;
            }
            return build(
                format!("https://{}", split.repo),
                info.domain.to_string(),
                format!("{}/{}", info.user, info.project),
                info.committish.or(split.git_ref.clone()),
            );
        }
    }
    generic(url)
}

fn has_protocol(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    ["http://", "https://", "ssh://", "git://"]
        .iter()
        .any(|p| lower.starts_with(p))
}

struct Split {
    repo: String,
    git_ref: Option<String>,
}

/// The repository and the ref after the first `@` of its path (`@` in `git@host:` and in URL
/// user info does not count).
fn split_ref(url: &str) -> Split {
    let whole = || Split {
        repo: url.to_string(),
        git_ref: None,
    };
    let at_path = |path: &str| -> Option<(String, String)> {
        let i = path.find('@')?;
        let (repo, r) = (&path[..i], &path[i + 1..]);
        (!repo.is_empty() && !r.is_empty()).then(|| (repo.to_string(), r.to_string()))
    };
    if let Some((host, path)) = scp_like(url) {
        return match at_path(path) {
            Some((repo, r)) => Split {
                repo: format!("git@{host}:{repo}"),
                git_ref: Some(r),
            },
            None => whole(),
        };
    }
    if url.contains("://") {
        let Ok(mut parsed) = Url::parse(url) else {
            return whole();
        };
        let path = parsed.path().trim_start_matches('/').to_string();
        let Some((repo, r)) = at_path(&path) else {
            return whole();
        };
        parsed.set_path(&format!("/{repo}"));
        let text = parsed.to_string();
        return Split {
            repo: text.strip_suffix('/').unwrap_or(&text).to_string(),
            git_ref: Some(r),
        };
    }
    let Some(slash) = url.find('/') else {
        return whole();
    };
    let (host, path) = (&url[..slash], &url[slash + 1..]);
    match at_path(path) {
        Some((repo, r)) => Split {
            repo: format!("{host}/{repo}"),
            git_ref: Some(r),
        },
        None => whole(),
    }
}

/// `git@host:path` → `(host, path)`.
fn scp_like(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("git@")?;
    let colon = rest.find(':')?;
    let (host, path) = (&rest[..colon], &rest[colon + 1..]);
    (!host.is_empty() && !path.is_empty()).then_some((host, path))
}

/// Pi's `buildGitSource`: rejects absolute, too short or unsafe paths.
fn build(repo: String, host: String, path: String, git_ref: Option<String>) -> Option<GitSource> {
    if path.starts_with('/') {
        return None;
    }
    let path = path.strip_suffix(".git").unwrap_or(&path);
    let path = path.trim_start_matches('/').to_string();
    if host.is_empty() || path.is_empty() || path.split('/').count() < 2 {
        return None;
    }
    if unsafe_part(&host, false) || unsafe_part(&path, true) {
        return None;
    }
    let pinned = git_ref.is_some();
    Some(GitSource {
        repo,
        host,
        path,
        git_ref,
        pinned,
    })
}

/// Parts that could escape the install folder once used as path segments.
fn unsafe_part(value: &str, allow_slash: bool) -> bool {
    let Some(decoded) = percent_decode(value) else {
        return true;
    };
    [value, decoded.as_str()].iter().any(|c| {
        c.contains('\0')
            || c.contains('\\')
            || c.starts_with('/')
            || (!allow_slash && c.contains('/'))
            || c.split('/').any(|s| s == "..")
    })
}

/// `decodeURIComponent`: `None` for malformed escapes or invalid UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Pi's `parseGenericGitUrl`.
fn generic(url: &str) -> Option<GitSource> {
    let split = split_ref(url);
    let mut repo = split.repo.clone();
    let (host, path);
    if let Some((h, p)) = scp_like(&split.repo) {
        host = h.to_string();
        path = p.to_string();
    } else if ["https://", "http://", "ssh://", "git://"]
        .iter()
        .any(|p| split.repo.starts_with(p))
    {
        let parsed = Url::parse(&split.repo).ok()?;
        host = parsed.host_str().unwrap_or("").to_string();
        path = parsed.path().trim_start_matches('/').to_string();
    } else {
        let slash = split.repo.find('/')?;
        host = split.repo[..slash].to_string();
        path = split.repo[slash + 1..].to_string();
        if !host.contains('.') && host != "localhost" {
            return None;
        }
        repo = format!("https://{}", split.repo);
    }
    build(repo, host, path, split.git_ref)
}

/// What `hosted-git-info` reports for a URL of a known host.
struct Hosted {
    domain: &'static str,
    user: String,
    project: String,
    committish: Option<String>,
}

struct Host {
    name: &'static str,
    domain: &'static str,
    protocols: &'static [&'static str],
}

const HOSTS: [Host; 4] = [
    Host {
        name: "github",
        domain: "github.com",
        protocols: &["git:", "http:", "git+ssh:", "git+https:", "ssh:", "https:"],
    },
    Host {
        name: "bitbucket",
        domain: "bitbucket.org",
        protocols: &["git+ssh:", "git+https:", "ssh:", "https:"],
    },
    Host {
        name: "gitlab",
        domain: "gitlab.com",
        protocols: &["git+ssh:", "git+https:", "ssh:", "https:"],
    },
    Host {
        name: "sourcehut",
        domain: "git.sr.ht",
        protocols: &["git+ssh:", "https:"],
    },
];

/// Schemes `hosted-git-info` knows (its own plus one shortcut per host).
const PROTOCOLS: [&str; 12] = [
    "git+ssh:",
    "ssh:",
    "git+https:",
    "git:",
    "http:",
    "https:",
    "git+http:",
    "github:",
    "gitlab:",
    "bitbucket:",
    "gist:",
    "sourcehut:",
];

/// `hosted-git-info`'s `fromUrl` for the hosts above.
fn hosted(giturl: &str) -> Option<Hosted> {
    if giturl.is_empty() {
        return None;
    }
    let corrected = if is_github_shorthand(giturl) {
        format!("github:{giturl}")
    } else {
        giturl.to_string()
    };
    let parsed = Url::parse(&correct_protocol(&corrected))
        .or_else(|_| Url::parse(&correct_url(&correct_protocol(&corrected))))
        .ok()?;
    let scheme = format!("{}:", parsed.scheme());
    let by_shortcut = HOSTS.iter().find(|h| format!("{}:", h.name) == scheme);
    let hostname = parsed.host_str().unwrap_or("");
    let hostname = hostname.strip_prefix("www.").unwrap_or(hostname);
    let host = by_shortcut.or_else(|| HOSTS.iter().find(|h| h.domain == hostname))?;
    let hash = parsed.fragment().map(str::to_string);
    if by_shortcut.is_some() {
        let mut path = parsed.path().strip_prefix('/').unwrap_or(parsed.path());
        if let Some(at) = path.find('@') {
            path = &path[at + 1..];
        }
        let (user, project) = match path.rfind('/') {
            Some(i) => (percent_decode(&path[..i])?, percent_decode(&path[i + 1..])?),
            None => (String::new(), percent_decode(path)?),
        };
        let project = project.strip_suffix(".git").unwrap_or(&project).to_string();
        let committish = match hash {
            Some(h) => Some(percent_decode(&h)?),
            None => None,
        };
        return Some(Hosted {
            domain: host.domain,
            user,
            project,
            committish: committish.filter(|c| !c.is_empty()),
        });
    }
    if !host.protocols.contains(&scheme.as_str()) {
        return None;
    }
    let (user, project, committish) = extract(host.name, parsed.path(), hash.as_deref())?;
    Some(Hosted {
        domain: host.domain,
        user: percent_decode(&user)?,
        project: percent_decode(&project)?,
        committish: Some(percent_decode(&committish)?).filter(|c| !c.is_empty()),
    })
}

/// Each host's `extract`: user, project and committish from a URL path and hash.
fn extract(host: &str, pathname: &str, hash: Option<&str>) -> Option<(String, String, String)> {
    let hash = hash.unwrap_or("").to_string();
    let strip_git = |p: &str| p.strip_suffix(".git").unwrap_or(p).to_string();
    let segments: Vec<&str> = pathname.splitn(5, '/').collect();
    let seg = |i: usize| segments.get(i).copied().unwrap_or("");
    match host {
        "github" => {
            let (user, project, kind) = (seg(1), seg(2), seg(3));
            if !kind.is_empty() && kind != "tree" {
                return None;
            }
            let committish = if kind.is_empty() {
                hash
            } else {
                // `split('/', 5)` keeps only the fifth piece's first segment.
                seg(4).split('/').next().unwrap_or("").to_string()
            };
            let project = strip_git(project);
            (!user.is_empty() && !project.is_empty())
                .then(|| (user.to_string(), project, committish))
        }
        "gitlab" => {
            let path = pathname.strip_prefix('/').unwrap_or(pathname);
            if path.contains("/-/") || path.contains("/archive.tar.gz") {
                return None;
            }
            let (user, project) = match path.rfind('/') {
                Some(i) => (&path[..i], &path[i + 1..]),
                None => ("", path),
            };
            let project = strip_git(project);
            (!user.is_empty() && !project.is_empty()).then(|| (user.to_string(), project, hash))
        }
        _ => {
            // bitbucket (`get` archives) and sourcehut (`archive`) share one shape.
            let (user, project, aux) = (seg(1), seg(2), seg(3).split('/').next().unwrap_or(""));
            let blocked = if host == "bitbucket" {
                "get"
            } else {
                "archive"
            };
            if aux == blocked {
                return None;
            }
            let project = strip_git(project);
            (!user.is_empty() && !project.is_empty()).then(|| (user.to_string(), project, hash))
        }
    }
}

/// `user/repo` (no scheme, no second slash, no `@` or `:` before a `#`).
fn is_github_shorthand(arg: &str) -> bool {
    let hash = arg.find('#');
    let before_hash = |i: Option<usize>| match (i, hash) {
        (None, _) => true,
        (Some(i), Some(h)) => i > h,
        (Some(_), None) => false,
    };
    let first_slash = arg.find('/');
    let second_slash = first_slash.and_then(|f| arg[f + 1..].find('/').map(|s| s + f + 1));
    let space = arg.find(char::is_whitespace);
    let ends_with_slash = match hash {
        Some(h) => h > 0 && arg.as_bytes()[h - 1] == b'/',
        None => arg.ends_with('/'),
    };
    before_hash(space)
        && matches!(first_slash, Some(i) if i > 0)
        && !ends_with_slash
        && !arg.starts_with('.')
        && before_hash(arg.find('@'))
        && before_hash(arg.find(':'))
        && before_hash(second_slash)
}

/// `git:github.com:user/repo`-style inputs get their `//`; `user@host:path` becomes `git+ssh`.
fn correct_protocol(arg: &str) -> String {
    let colon = arg.find(':');
    let proto = colon.map(|c| &arg[..=c]).unwrap_or("");
    if PROTOCOLS.contains(&proto) {
        return arg.to_string();
    }
    if let Some(c) = colon
        && arg[c..].starts_with("://")
    {
        return arg.to_string();
    }
    if let Some(at) = arg.find('@') {
        return match colon {
            Some(c) if at < c => arg.to_string(),
            _ => format!("git+ssh://{arg}"),
        };
    }
    match colon {
        Some(c) => format!("{}//{}", &arg[..=c], &arg[c + 1..]),
        None => format!("//{arg}"),
    }
}

/// scp-style `user@host:path` → `user@host/path`, with `git+ssh://` when no scheme is left.
fn correct_url(giturl: &str) -> String {
    let hash = giturl.find('#').unwrap_or(giturl.len());
    let before = &giturl[..hash];
    let at = before.rfind('@');
    let colon = before.rfind(':');
    let mut out = giturl.to_string();
    if let Some(c) = colon
        && at.is_none_or(|a| c > a)
    {
        out.replace_range(c..=c, "/");
    }
    let hash = out.find('#').unwrap_or(out.len());
    if !out[..hash].contains(':') && !out.contains("//") {
        out = format!("git+ssh://{out}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(s: &str) -> String {
        match parse_git_url(s) {
            None => "null".into(),
            Some(g) => format!(
                "{} {} {} {:?} {}",
                g.repo, g.host, g.path, g.git_ref, g.pinned
            ),
        }
    }

    /// Each expectation was printed by Pi 1.6.0's `parseGitUrl`.
    #[test]
    fn forms_parse_as_in_pi() {
        let cases = [
            (
                "git:github.com/user/repo",
                "https://github.com/user/repo github.com user/repo None false",
            ),
            (
                "git:github.com/user/repo@v1",
                "https://github.com/user/repo github.com user/repo Some(\"v1\") true",
            ),
            (
                "https://github.com/user/repo",
                "https://github.com/user/repo github.com user/repo None false",
            ),
            (
                "https://github.com/user/repo.git@abc",
                "https://github.com/user/repo.git github.com user/repo Some(\"abc\") true",
            ),
            (
                "git:git@github.com:user/repo",
                "git@github.com:user/repo github.com user/repo None false",
            ),
            (
                "git:git@github.com:user/repo@v2",
                "git@github.com:user/repo github.com user/repo Some(\"v2\") true",
            ),
            (
                "ssh://git@github.com/user/repo",
                "ssh://git@github.com/user/repo github.com user/repo None false",
            ),
            (
                "git:gitlab.com/g/sub/repo",
                "https://gitlab.com/g/sub/repo gitlab.com g/sub/repo None false",
            ),
            (
                "git:localhost/o/r",
                "https://localhost/o/r localhost o/r None false",
            ),
            (
                "git:127.0.0.1/o/r",
                "https://127.0.0.1/o/r 127.0.0.1 o/r None false",
            ),
            (
                "http://127.0.0.1:8080/o/r.git",
                "http://127.0.0.1:8080/o/r.git 127.0.0.1 o/r None false",
            ),
            (
                "http://127.0.0.1:8080/o/r@main",
                "http://127.0.0.1:8080/o/r 127.0.0.1 o/r Some(\"main\") true",
            ),
            ("git://127.0.0.1/o/r", "null"),
            (
                "git:example.com/o/r@x",
                "https://example.com/o/r example.com o/r Some(\"x\") true",
            ),
            ("github:user/repo", "null"),
            (
                "git:user/repo",
                "https://user/repo github.com user/repo None false",
            ),
            (
                "git:bitbucket.org/u/r",
                "https://bitbucket.org/u/r bitbucket.org u/r None false",
            ),
            (
                "https://github.com/u/r/tree/main",
                "https://github.com/u/r/tree/main github.com u/r Some(\"main\") true",
            ),
            ("git:file:///tmp/x/repo", "null"),
            (
                "git:github.com/u/r#dev",
                "https://github.com/u/r#dev github.com u/r Some(\"dev\") true",
            ),
            (
                "https://example.com/u/r#dev",
                "https://example.com/u/r#dev example.com u/r None false",
            ),
            ("git:host/a", "https://host/a github.com host/a None false"),
            (
                "git:HOST.com/u/R.git",
                "https://HOST.com/u/R.git HOST.com u/R None false",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(show(input), want, "{input}");
        }
    }
}
