//! Browser sessions for the daemons' web pages (the coordinator's
//! dashboard, a station's owner page): a pool token or a socket peer never
//! goes into a URL or into the browser.
//!
//! 1. A caller already authenticated the usual way (a bearer token on TCP,
//!    peer credentials on a station's user socket) asks for a **login
//!    ticket** ([`WebSessions::issue_ticket`]): 256 random bits, good for
//!    [`TICKET_TTL`] and for one use.
//! 2. The browser opens `…/login?ticket=T`. The page's handler
//!    [redeems](WebSessions::redeem) it (it is gone from then on, so a URL
//!    found in a log later is worth nothing) and answers with a session
//!    cookie: `HttpOnly` (no script reads it), `SameSite=Strict` (no other
//!    site's page sends it), `Path` limited to the pages.
//! 3. Each request of the page carries the cookie; [`WebSessions::caller`]
//!    gives the [`Caller`] the ticket was issued to, until the session
//!    expires ([`SESSION_TTL`]) or is logged out.
//! 4. Requests that change something also carry the session's CSRF token
//!    in the `X-Gleaner-CSRF` header ([`WebSessions::check_csrf`]): the
//!    page reads it from its state JSON, which only a same-origin script
//!    can read. Their `Origin` must be the page's own (a browser sends it
//!    with every POST; a request without one, or from another site, is
//!    refused).
//! 5. A session lives no longer than the credential it came from: a
//!    ticket may carry the token's expiry ([`WebSessions::issue_ticket_until`]),
//!    which bounds the session's, and a daemon may install a
//!    [`Validator`] that every use of a session asks again (the
//!    coordinator's checks the token's revocation), so a revoked token's
//!    session is refused at once and an open event stream ends
//!    ([`WebSessions::revalidate`]).
//!
//! Tickets and sessions live in memory only (a restarted daemon forgets
//! them: log in again) and are bounded in number.

use crate::{ApiError, Caller};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use gleaner_proto::wire::ErrorCode;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The pages' shared style sheet (served by each daemon from its binary).
pub const STYLE_CSS: &str = include_str!("web_assets/style.css");
/// The pages' shared script: DOM and SVG helpers, charts, live updates.
pub const CHARTS_JS: &str = include_str!("web_assets/charts.js");

/// How long a login ticket may wait to be redeemed.
pub const TICKET_TTL: Duration = Duration::from_secs(60);
/// How long a session lasts from login.
pub const SESSION_TTL: Duration = Duration::from_secs(8 * 3600);
/// Tickets not yet redeemed, at most (the oldest is dropped past it).
const MAX_TICKETS: usize = 256;
/// Sessions at once, at most (the oldest is dropped past it).
const MAX_SESSIONS: usize = 1024;
/// The header a state-changing request carries the CSRF token in.
pub const CSRF_HEADER: &str = "x-gleaner-csrf";

/// One logged-in browser.
#[derive(Clone, Debug)]
pub struct Session {
    pub caller: Caller,
    /// The token state-changing requests must repeat in [`CSRF_HEADER`].
    pub csrf: String,
    /// The session's id (its cookie's value).
    id: String,
    expires: Instant,
}

/// A ticket not yet redeemed: for whom, when issued, and until when (UNIX
/// seconds) the credential it was issued on is valid.
struct Ticket {
    caller: Caller,
    issued: Instant,
    until: Option<u64>,
}

#[derive(Default)]
struct Book {
    tickets: HashMap<String, Ticket>,
    sessions: HashMap<String, Session>,
}

/// Asked on every use of a session: `Err(why)` ends it (e.g. the token
/// it was opened with has been revoked since).
pub type Validator = Arc<dyn Fn(&Caller) -> Result<(), String> + Send + Sync>;

/// The tickets and sessions of one daemon's pages.
pub struct WebSessions {
    cookie: &'static str,
    path: &'static str,
    /// Pages served over TLS: the cookie is `Secure` (never sent in clear).
    secure: bool,
    book: Mutex<Book>,
    validator: Option<Validator>,
}

/// 256 random bits, hex; `None` when the kernel's CSPRNG cannot be read.
fn secret() -> Option<String> {
    gleaner_proto::creds::random_hex(32).ok()
}

impl WebSessions {
    /// Sessions whose cookie is named `cookie` and sent only below `path`.
    pub fn new(cookie: &'static str, path: &'static str) -> Self {
        WebSessions {
            cookie,
            path,
            secure: false,
            book: Mutex::new(Book::default()),
            validator: None,
        }
    }

    /// Asks `check` on every use of a session; a session it refuses is
    /// ended at once.
    pub fn with_validator(mut self, check: Validator) -> Self {
        self.validator = Some(check);
        self
    }

    /// The same, for pages served over TLS when `tls`: the cookie gets
    /// `Secure`, so a browser never sends it over plain HTTP.
    pub fn over_tls(mut self, tls: bool) -> Self {
        self.secure = tls;
        self
    }

    fn attributes(&self, max_age: u64) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        format!(
            "Path={}; HttpOnly; SameSite=Strict{secure}; Max-Age={max_age}",
            self.path
        )
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A single-use login ticket for `caller`.
    pub fn issue_ticket(&self, caller: Caller) -> Result<String, ApiError> {
        self.issue_ticket_until(caller, None)
    }

    /// A single-use login ticket for `caller`, whose credential is valid
    /// until `until` (UNIX seconds; `None`: no expiry): the session ends
    /// then at the latest.
    pub fn issue_ticket_until(
        &self,
        caller: Caller,
        until: Option<u64>,
    ) -> Result<String, ApiError> {
        let ticket = secret().ok_or_else(|| {
            ApiError::new(ErrorCode::Internal, "no random bytes for a login ticket")
        })?;
        let now = Instant::now();
        let mut b = self.book();
        b.tickets
            .retain(|_, t| now.duration_since(t.issued) < TICKET_TTL);
        if b.tickets.len() >= MAX_TICKETS
            && let Some(oldest) = b
                .tickets
                .iter()
                .min_by_key(|(_, t)| t.issued)
                .map(|(k, _)| k.clone())
        {
            b.tickets.remove(&oldest);
        }
        b.tickets.insert(
            ticket.clone(),
            Ticket {
                caller,
                issued: now,
                until,
            },
        );
        Ok(ticket)
    }

    /// Spends `ticket`: the new session's id and the session, or `None`
    /// for an unknown, used or expired ticket.
    pub fn redeem(&self, ticket: &str) -> Option<(String, Session)> {
        let now = Instant::now();
        let mut b = self.book();
        let Ticket {
            caller,
            issued,
            until,
        } = b.tickets.remove(ticket)?;
        if now.duration_since(issued) >= TICKET_TTL {
            return None;
        }
        // No longer than the credential the ticket was issued on.
        let ttl = match until {
            Some(u) => SESSION_TTL.min(Duration::from_secs(u.saturating_sub(crate::wall_secs()))),
            None => SESSION_TTL,
        };
        if ttl.is_zero() {
            return None;
        }
        let (id, csrf) = (secret()?, secret()?);
        b.sessions.retain(|_, s| s.expires > now);
        if b.sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = b
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(k, _)| k.clone())
        {
            b.sessions.remove(&oldest);
        }
        let s = Session {
            caller,
            csrf,
            id: id.clone(),
            expires: now + ttl,
        };
        b.sessions.insert(id.clone(), s.clone());
        Some((id, s))
    }

    /// The `Set-Cookie` value that gives the browser session `id`.
    pub fn cookie_for(&self, id: &str) -> HeaderValue {
        self.cookie_lasting(id, SESSION_TTL)
    }

    fn cookie_lasting(&self, id: &str, ttl: Duration) -> HeaderValue {
        let v = format!("{}={id}; {}", self.cookie, self.attributes(ttl.as_secs()));
        HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// The `Set-Cookie` value that removes the cookie.
    pub fn clear_cookie(&self) -> HeaderValue {
        let v = format!("{}=; {}", self.cookie, self.attributes(0));
        HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// The session id the request's cookie names, if any.
    fn session_id<'h>(&self, headers: &'h HeaderMap) -> Option<&'h str> {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .find(|(k, _)| *k == self.cookie)
            .map(|(_, v)| v)
    }

    /// The live session the request's cookie names; 401 otherwise.
    pub fn session(&self, headers: &HeaderMap) -> Result<Session, ApiError> {
        let id = self.session_id(headers).ok_or_else(|| {
            ApiError::new(
                ErrorCode::Unauthorized,
                "no session: log in with a ticket first",
            )
        })?;
        self.by_id(id)
    }

    /// Session `s` again, as it stands now (for a long-lived request such
    /// as an event stream): 401 once it was logged out, expired or its
    /// credential refused by the [`Validator`].
    pub fn revalidate(&self, s: &Session) -> Result<Session, ApiError> {
        self.by_id(&s.id)
    }

    fn by_id(&self, id: &str) -> Result<Session, ApiError> {
        let unauth = |m: &str| ApiError::new(ErrorCode::Unauthorized, m);
        let now = Instant::now();
        let s = {
            let mut b = self.book();
            match b.sessions.get(id) {
                Some(s) if s.expires > now => s.clone(),
                Some(_) => {
                    b.sessions.remove(id);
                    return Err(unauth("the session has expired: log in again"));
                }
                None => return Err(unauth("unknown session: log in again")),
            }
        };
        // Asked without the book's lock: the check may read files.
        if let Some(check) = &self.validator
            && let Err(why) = check(&s.caller)
        {
            self.book().sessions.remove(id);
            tracing::warn!(caller = %s.caller.name, %why, "web session ended");
            return Err(unauth(&format!("{why}: log in again")));
        }
        Ok(s)
    }

    /// The caller of the request's session; 401 otherwise.
    pub fn caller(&self, headers: &HeaderMap) -> Result<Caller, ApiError> {
        self.session(headers).map(|s| s.caller)
    }

    /// For a request that changes something: its session, which must also
    /// come from the page's own origin ([`same_origin`]) and show the
    /// session's CSRF token in [`CSRF_HEADER`] (403 otherwise).
    pub fn check_csrf(&self, headers: &HeaderMap) -> Result<Session, ApiError> {
        let s = self.session(headers)?;
        if let Err(why) = same_origin(headers, self.secure) {
            tracing::warn!(caller = %s.caller.name, %why, "web request from another origin refused");
            return Err(ApiError::new(ErrorCode::Forbidden, why));
        }
        let sent = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
        if sent.is_some_and(|t| constant_time_eq(t.as_bytes(), s.csrf.as_bytes())) {
            Ok(s)
        } else {
            tracing::warn!(caller = %s.caller.name, "web request without the session's CSRF token refused");
            Err(ApiError::new(
                ErrorCode::Forbidden,
                "missing or wrong CSRF token (X-Gleaner-CSRF)",
            ))
        }
    }

    /// `GET …/login?ticket=T`: spends the ticket and answers with the
    /// session cookie and a redirect to `landing`; `None` for an unknown,
    /// used or expired ticket.
    pub fn login(&self, ticket: &str, landing: &'static str) -> Option<Response> {
        let (id, s) = self.redeem(ticket)?;
        tracing::info!(caller = %s.caller.name, role = ?s.caller.role, page = landing, "web login");
        let mut r = (StatusCode::SEE_OTHER, [(header::LOCATION, landing)]).into_response();
        let ttl = s.expires.saturating_duration_since(Instant::now());
        r.headers_mut()
            .insert(header::SET_COOKIE, self.cookie_lasting(&id, ttl));
        page_headers(r.headers_mut());
        Some(r)
    }

    /// Ends the request's session, if any.
    pub fn logout(&self, headers: &HeaderMap) {
        if let Some(id) = self.session_id(headers) {
            self.book().sessions.remove(id);
        }
    }
}

/// Whether a state-changing request comes from the page's own origin: its
/// `Origin` header (which browsers send with every POST and scripts cannot
/// forge) must name the scheme the pages are served with (`https` when
/// `secure`) and the `Host` the request was sent to. `Err` says why not.
/// Defence in depth beside the `SameSite=Strict` cookie and the CSRF token.
pub fn same_origin(headers: &HeaderMap, secure: bool) -> Result<(), String> {
    let get = |h: header::HeaderName| headers.get(h).and_then(|v| v.to_str().ok());
    let Some(origin) = get(header::ORIGIN) else {
        return Err("a change needs the page's Origin header".into());
    };
    let host = get(header::HOST).unwrap_or_default();
    let scheme = if secure { "https://" } else { "http://" };
    let authority = origin.strip_prefix(scheme);
    if !host.is_empty() && authority.is_some_and(|a| a.eq_ignore_ascii_case(host)) {
        Ok(())
    } else {
        Err(format!(
            "Origin {origin:?} is not this page's ({scheme}{host}): refused"
        ))
    }
}

/// Compares secrets without stopping at the first difference.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A page or asset compiled into the binary, with [`page_headers`].
pub fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut r = ([(header::CONTENT_TYPE, content_type)], body).into_response();
    page_headers(r.headers_mut());
    r
}

/// The 401 page for a browser without a session: `why`, and the command
/// that prints a fresh login link. `css` is the page's style sheet.
pub fn login_needed(title: &str, css: &str, why: &str, command: &str) -> Response {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>{t}</title><link rel=icon href=\"data:,\">\
         <link rel=stylesheet href=\"{c}\"><main class=login><h1>{t}</h1><p>{w}</p>\
         <p>Run <code>{m}</code> to open it with a fresh login link.</p></main>",
        t = esc(title),
        c = esc(css),
        w = esc(why),
        m = esc(command)
    );
    let mut r = (
        StatusCode::UNAUTHORIZED,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response();
    page_headers(r.headers_mut());
    r
}

/// Headers every page and its assets are served with: no framing by
/// other sites, no content sniffing, scripts and styles from this origin
/// only (no CDN), no referrer that could carry a URL elsewhere.
pub fn page_headers(headers: &mut HeaderMap) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; \
             connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
        ),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Credential, Role};

    fn alice() -> Caller {
        Caller {
            name: "alice".into(),
            role: Role::User,
            credential: Credential::Peer { uid: 1000 },
        }
    }

    fn with_cookie(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn cookies_are_secure_only_over_tls() {
        let plain = WebSessions::new("gleaner_dash", "/dashboard");
        let tls = WebSessions::new("gleaner_dash", "/dashboard").over_tls(true);
        let c = |v: HeaderValue| v.to_str().unwrap().to_string();
        assert!(!c(plain.cookie_for("x")).contains("Secure"));
        for v in [c(tls.cookie_for("x")), c(tls.clear_cookie())] {
            assert!(v.contains("; Secure;"), "{v}");
            assert!(
                v.contains("HttpOnly") && v.contains("SameSite=Strict"),
                "{v}"
            );
        }
    }

    #[test]
    fn a_ticket_is_spent_once_and_the_cookie_names_the_caller() {
        let w = WebSessions::new("gleaner_dash", "/dashboard");
        let t = w.issue_ticket(alice()).unwrap();
        assert_eq!(t.len(), 64);
        let (id, s) = w.redeem(&t).unwrap();
        assert!(w.redeem(&t).is_none(), "single use");
        assert!(w.redeem("nonsense").is_none());
        let cookie = w.cookie_for(&id);
        let c = cookie.to_str().unwrap();
        assert!(
            c.contains("HttpOnly")
                && c.contains("SameSite=Strict")
                && c.contains("Path=/dashboard")
        );
        let h = with_cookie(&format!("other=1; gleaner_dash={id}"));
        assert_eq!(w.caller(&h).unwrap().name, "alice");
        // CSRF: the header must repeat the session's token, from the
        // page's own origin.
        assert_eq!(w.check_csrf(&h).unwrap_err().code(), ErrorCode::Forbidden);
        let mut h2 = h.clone();
        h2.insert(CSRF_HEADER, HeaderValue::from_str(&s.csrf).unwrap());
        assert!(w.check_csrf(&h2).is_err(), "no Origin");
        h2.insert(header::HOST, HeaderValue::from_static("ws1:9618"));
        h2.insert(header::ORIGIN, HeaderValue::from_static("http://evil:9618"));
        assert_eq!(w.check_csrf(&h2).unwrap_err().code(), ErrorCode::Forbidden);
        h2.insert(header::ORIGIN, HeaderValue::from_static("http://ws1:9618"));
        assert!(w.check_csrf(&h2).is_ok());
        h2.insert(CSRF_HEADER, HeaderValue::from_static("00"));
        assert!(w.check_csrf(&h2).is_err());
        // Unknown or absent sessions are 401; logout ends one.
        assert_eq!(
            w.caller(&with_cookie("gleaner_dash=ff"))
                .unwrap_err()
                .code(),
            ErrorCode::Unauthorized
        );
        assert!(w.caller(&HeaderMap::new()).is_err());
        w.logout(&h);
        assert!(w.caller(&h).is_err());
    }

    #[test]
    fn origins_must_be_the_pages_own() {
        let h = |origin: Option<&'static str>| {
            let mut h = HeaderMap::new();
            h.insert(header::HOST, HeaderValue::from_static("coord.pool:9618"));
            if let Some(o) = origin {
                h.insert(header::ORIGIN, HeaderValue::from_static(o));
            }
            h
        };
        assert!(same_origin(&h(Some("https://coord.pool:9618")), true).is_ok());
        assert!(same_origin(&h(Some("https://COORD.pool:9618")), true).is_ok());
        for bad in [
            None,
            Some("null"),
            Some("http://coord.pool:9618"),
            Some("https://coord.pool:9619"),
            Some("https://coord.pool:9618.evil"),
            Some("https://evil.example"),
        ] {
            assert!(same_origin(&h(bad), true).is_err(), "{bad:?}");
        }
        assert!(same_origin(&h(Some("http://coord.pool:9618")), false).is_ok());
    }

    #[test]
    fn a_refused_credential_ends_its_sessions_at_once() {
        let revoked = Arc::new(Mutex::new(false));
        let r = revoked.clone();
        let w = WebSessions::new("c", "/").with_validator(Arc::new(move |_: &Caller| {
            if *r.lock().unwrap() {
                Err("token revoked".into())
            } else {
                Ok(())
            }
        }));
        let (id, s) = w.redeem(&w.issue_ticket(alice()).unwrap()).unwrap();
        let h = with_cookie(&format!("c={id}"));
        assert!(w.caller(&h).is_ok() && w.revalidate(&s).is_ok());
        *revoked.lock().unwrap() = true;
        let e = w.caller(&h).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Unauthorized);
        assert!(e.message().contains("token revoked"), "{}", e.message());
        assert!(w.revalidate(&s).is_err());
        // Gone for good, even if the check would pass again.
        *revoked.lock().unwrap() = false;
        assert!(w.caller(&h).is_err());
    }

    #[test]
    fn a_session_ends_with_its_token() {
        let w = WebSessions::new("c", "/");
        let soon = crate::wall_secs() + 30;
        let (_, s) = w
            .redeem(&w.issue_ticket_until(alice(), Some(soon)).unwrap())
            .unwrap();
        let left = s.expires.saturating_duration_since(Instant::now());
        assert!(left <= Duration::from_secs(30), "{left:?}");
        // A ticket on a token expired by the time it is redeemed: nothing.
        let t = w
            .issue_ticket_until(alice(), Some(crate::wall_secs() - 1))
            .unwrap();
        assert!(w.redeem(&t).is_none());
    }

    #[test]
    fn tickets_are_bounded() {
        let w = WebSessions::new("c", "/");
        let first = w.issue_ticket(alice()).unwrap();
        for _ in 0..MAX_TICKETS {
            w.issue_ticket(alice()).unwrap();
        }
        assert!(w.book().tickets.len() <= MAX_TICKETS);
        assert!(w.redeem(&first).is_none(), "the oldest went first");
    }
}
