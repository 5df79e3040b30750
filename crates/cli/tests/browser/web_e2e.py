#!/usr/bin/env python3
"""Browser test of the coordinator's dashboard and a station's owner page,
driven by crates/cli/tests/web_browser.rs on a real `glean up` pool.

Reads a JSON configuration on stdin (URLs, commands, paths), drives
Debian's headless Chromium through Playwright, and prints one JSON line of
measurements on stdout. Exits 3 when Playwright or Chromium is missing
(the Rust side skips or fails as GLEANER_REQUIRE_BROWSER says), 1 on a
failed check (the message says which).
"""
import json
import re
import os
import subprocess
import sys
import tempfile
import time

try:
    from playwright.sync_api import sync_playwright
except ImportError as e:  # pragma: no cover - environment
    print(f"playwright is not installed: {e}", file=sys.stderr)
    sys.exit(3)

CFG = json.load(sys.stdin)
CHROMIUM = CFG.get("chromium", "/usr/bin/chromium")
if not os.path.exists(CHROMIUM):
    print(f"no Chromium at {CHROMIUM}", file=sys.stderr)
    sys.exit(3)

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
OUT = {}


def fail(msg):
    print(f"FAILED: {msg}", file=sys.stderr)
    print(json.dumps(OUT))
    sys.exit(1)


def run(argv, as_user=False, check=True):
    """Runs a glean command (as the job owner when as_user)."""
    env = dict(os.environ, GLEAN_HOME=CFG["glean_home"])
    pre = None
    if as_user and os.getuid() == 0:
        uid, gid = CFG["user_uid"], CFG["user_gid"]

        def pre():
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
    p = subprocess.run(argv, env=env, cwd=CFG["work"], preexec_fn=pre, capture_output=True, text=True,
                       timeout=60)
    if check and p.returncode != 0:
        fail(f"{argv} exited {p.returncode}: {p.stderr}")
    return p.stdout


def glean(*args, as_user=False, check=True):
    return run([CFG["glean"], *args], as_user=as_user, check=check)


def glean_code(*args):
    """The exit code and stderr of a glean command (as root)."""
    p = subprocess.run([CFG["glean"], *args], env=dict(os.environ, GLEAN_HOME=CFG["glean_home"]),
                       cwd=CFG["work"], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stderr


def job_name(j):
    i = j["id"]
    return i if isinstance(i, str) else f"{i['cluster']}.{i['proc']}"


def job_state(j):
    s = j["state"]
    return s if isinstance(s, str) else s.get("state", "")


def q_jobs():
    return json.loads(glean("--json", "q", as_user=True) or "[]")


def status_rows():
    return json.loads(glean("--json", "status"))["stations"]


def write_owner(station, word):
    with open(CFG["owner_files"][station], "w") as f:
        f.write(word + "\n")


def wait_until(fn, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.2)
    fail(f"timed out ({timeout} s) waiting for {what}")


def guests_on_page(page):
    """{job: (station, state)} as the dashboard shows them now."""
    return page.evaluate("""() => {
        const out = {};
        for (const card of document.querySelectorAll('[data-station]')) {
            for (const g of card.querySelectorAll('li[data-job]')) {
                out[g.dataset.job] = [card.dataset.station, g.dataset.guestState];
            }
        }
        return out;
    }""")


def main():
    shots = CFG["screenshots"]
    # The throwaway profile goes once the browser has closed, whatever
    # the outcome.
    with tempfile.TemporaryDirectory(prefix="gleaner-chromium-", ignore_cleanup_errors=True) as profile, \
            sync_playwright() as p:
        # The pages come over TLS from the pool's own CA, which this
        # throwaway profile does not trust; the chain and names are checked
        # by the Rust clients' tests (tls_attacks.rs).
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=ARGS, headless=True,
            ignore_https_errors=True,
            viewport={"width": 1400, "height": 1000})
        errors = []

        def watch(page):
            page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        dash = ctx.new_page()
        watch(dash)

        # 1. The dashboard loads (login link → cookie → page) with no errors.
        dash.goto(CFG["dashboard_url"])
        if not dash.url.endswith("/dashboard/"):
            fail(f"login did not land on the dashboard: {dash.url}")
        for s in CFG["stations"]:
            dash.wait_for_selector(f'[data-station="{s}"]', timeout=10000)
        cookies = ctx.cookies()
        if not cookies or any(c.get("httpOnly") is not True or c.get("sameSite") != "Strict" for c in cookies):
            fail(f"session cookies not HttpOnly and SameSite=Strict: {cookies}")
        cookie_js = dash.evaluate("document.cookie")
        if "gleaner" in cookie_js:
            fail(f"the session cookie is readable by scripts: {cookie_js}")
        loads_before = dash.evaluate("performance.getEntriesByType('navigation').length")
        # A user's session: no administrator's buttons, no token list.
        if dash.query_selector_all("[data-action]") or dash.is_visible("#tokens"):
            fail("a user's dashboard shows administrator actions")

        # 2. Short CPU-bound jobs first (what the owner's page lists as
        # having run here), then long ones that must appear running on the
        # right stations without a reload.
        n = CFG["jobs"]
        glean("submit", "short.sub", as_user=True)
        wait_until(lambda: len(json.loads(glean("--json", "history", as_user=True) or "[]")) >= n, 60,
                   "the short jobs to finish")
        said = glean("submit", "job.sub", as_user=True)
        m = re.search(r"submitted to cluster (\d+)", said or "")
        if not m:
            fail(f"glean submit said: {said!r}")
        cluster = m.group(1) + "."
        t0 = time.monotonic()

        # Only the new cluster's guests: the page may still show the short
        # jobs for up to one advertisement period after they finished.
        def placed():
            g = guests_on_page(dash)
            running = {k: v for k, v in g.items() if v[1] == "running" and k.startswith(cluster)}
            return running if len(running) >= n else None
        shown = wait_until(placed, 60, f"{n} running guests on the dashboard")
        OUT["jobs_running_shown_secs"] = round(time.monotonic() - t0, 2)
        truth = {job_name(j): j.get("host") for j in q_jobs() if job_state(j) == "running"}
        for job, (station, _) in shown.items():
            if truth.get(job) != station:
                fail(f"job {job} shown on {station}, glean q says {truth.get(job)}")
        OUT["jobs_checked"] = sorted(shown)
        if dash.evaluate("performance.getEntriesByType('navigation').length") != loads_before:
            fail("the dashboard reloaded")

        # 2b. A job links to its history: clicked, its panel lists the
        # newest events its home carries in its ad, oldest first, from its
        # submission to its placement on the station it is shown on.
        job, (station, _) = sorted(shown.items())[0]
        t0 = time.monotonic()
        dash.click(f'[data-station="{station}"] li[data-job="{job}"] a')
        trail = f'#job ol.trail[data-job="{job}"]'
        try:
            dash.wait_for_selector(f'{trail} li[data-kind="started"]', timeout=15000)
        except Exception:
            fail(f"the panel of {job} shows no history: {dash.inner_text('#job')!r}")
        OUT["job_history_shown_secs"] = round(time.monotonic() - t0, 2)
        events = dash.eval_on_selector_all(f"{trail} li", "els => els.map(e => [e.dataset.kind, e.textContent])")
        kinds = [k for k, _ in events]
        if kinds[:1] != ["submitted"] or ("placed" in kinds and kinds.index("placed") > kinds.index("started")):
            fail(f"history of {job} out of order or incomplete: {events}")
        if not any(k in ("placed", "started") and station in text for k, text in events):
            fail(f"history of {job} does not say it went to {station}: {events}")
        OUT["job_history"] = kinds
        dash.click("#job button.close")
        if dash.evaluate("performance.getEntriesByType('navigation').length") != loads_before:
            fail("the dashboard reloaded")

        # 3. An owner returns: the station turns owner-active within 2 s.
        host = sorted(set(s for s, _ in shown.values()))[0]
        t0 = time.monotonic()
        write_owner(host, "active")
        try:
            dash.wait_for_selector(f'[data-station="{host}"][data-state="NA"]', timeout=2000)
        except Exception:
            fail(f"{host} did not turn owner-active on the dashboard within 2 s")
        OUT["owner_active_shown_secs"] = round(time.monotonic() - t0, 3)
        # The guest there follows the station's policy (condor1988: frozen).
        wait_until(lambda: any(v == [host, "suspended"] for v in guests_on_page(dash).values()), 10,
                   f"the guest on {host} shown suspended")
        dash.wait_for_timeout(600)
        dash.screenshot(path=os.path.join(shots, "dashboard.png"), full_page=True)
        write_owner(host, "idle")
        dash.wait_for_selector(f'[data-station="{host}"][data-state="AV"]', timeout=10000)
        wait_until(lambda: all(v[1] == "running" for v in guests_on_page(dash).values()), 10, "guests resumed")

        # 4. The owner's page: "stop lending now".
        owner_url = CFG["owner_urls"][host]
        op = ctx.new_page()
        watch(op)
        op.goto(owner_url)
        if not op.url.endswith("/owner/"):
            fail(f"owner login did not land on the page: {op.url}")
        op.wait_for_selector('#lending-badge[data-state="AV"]', timeout=10000)
        t0 = time.monotonic()
        op.click("#stop-now")
        op.wait_for_selector('#lending-badge[data-state="NA"]', timeout=5000)
        dash.wait_for_selector(f'[data-station="{host}"][data-state="NA"]', timeout=5000)
        OUT["stop_shown_on_dashboard_secs"] = round(time.monotonic() - t0, 3)
        policy = op.evaluate("document.getElementById('status-note').textContent")
        OUT["owner_page_note"] = policy

        # The guest follows the policy (condor1988 suspends at once): on the
        # owner's page, the dashboard and in glean q.
        op.wait_for_selector('#guests-now li[data-guest-state="suspended"]', timeout=10000)
        stopped_jobs = [j for j, v in guests_on_page(dash).items() if v[0] == host]

        def q_suspended():
            js = {job_name(j): job_state(j) for j in q_jobs()}
            return all(js.get(j) == "suspended" for j in stopped_jobs) and stopped_jobs
        wait_until(q_suspended, 15, f"glean q showing {stopped_jobs} suspended")
        rows = {r["name"]: r for r in status_rows()}
        if rows[host]["state"] != "NA":
            fail(f"glean status shows {host} as {rows[host]['state']} after stop")

        # No new guest comes to the stopped station.
        guests_before = rows[host]["guests"]
        glean("submit", "more.sub", as_user=True)
        time.sleep(CFG["no_guest_wait_secs"])
        rows = {r["name"]: r for r in status_rows()}
        if rows[host]["guests"] > guests_before:
            fail(f"{host} received a guest while stopped")
        OUT["stopped_station_guests"] = rows[host]["guests"]
        op.wait_for_timeout(1500)
        op.screenshot(path=os.path.join(shots, "owner.png"), full_page=True)

        # Lend again: the guest resumes.
        op.click("#resume")
        try:
            op.wait_for_selector('#lending-badge[data-state="AV"]', timeout=5000)
        except Exception:
            fail("resume not shown on the owner's page: badge " +
                 repr(op.evaluate("document.getElementById('lending-badge').dataset.state")) +
                 ", message " + repr(op.inner_text("#msg-stop")) + ", glean owner status: " +
                 glean("--json", "owner", "status", "--station", CFG["owner_sockets"][host], check=False))
        dash.wait_for_selector(f'[data-station="{host}"][data-state="AV"]', timeout=5000)
        op.wait_for_selector('#guests-now li[data-guest-state="running"]', timeout=10000)

        # A wrong CSRF token is refused and changes nothing (Chromium logs
        # the refused request itself as a console error: it is left out).
        if errors:
            fail("console errors: " + "; ".join(errors))
        r = op.evaluate("""async () => {
            const r = await fetch('/owner/api/controls', {method: 'POST', credentials: 'same-origin',
                headers: {'Content-Type': 'application/json', 'X-Gleaner-CSRF': 'forged'},
                body: JSON.stringify({action: 'stop', until_unix: null})});
            return r.status;
        }""")
        if r != 403:
            fail(f"a forged CSRF token got {r}")
        op.wait_for_timeout(300)
        if op.evaluate("document.getElementById('lending-badge').dataset.state") != "AV":
            fail("the forged request stopped lending")

        # The latencies the owner's page recorded.
        state = op.evaluate("fetch('/owner/api/state').then(r => r.json())")
        OUT["returns"] = [{"cause": r["cause"], "guests": r["guests"]} for r in state["owner"]["returns"]]
        if not any(g for r in state["owner"]["returns"] for g in r["guests"]):
            fail("no guest reaction recorded on the owner's page")
        # 5. An administrator (admin token's link, its own browser context):
        # the buttons are there; "Drain" marks the station drained without
        # a reload, on the user's page too and in glean status; "Undrain"
        # ends it. The user's page, posting the same action, gets 403.
        admin_browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        actx = admin_browser.new_context(ignore_https_errors=True, viewport={"width": 1400, "height": 1000})
        adm = actx.new_page()
        watch(adm)
        adm.goto(CFG["admin_dashboard_url"])
        target = host
        adm.wait_for_selector(f'[data-station="{target}"] [data-action="drain"]', timeout=10000)
        adm.wait_for_selector("#tokens tr[data-token]", timeout=10000)
        admin_loads = adm.evaluate("performance.getEntriesByType('navigation').length")
        t0 = time.monotonic()
        adm.click(f'[data-station="{target}"] [data-action="drain"]')
        adm.wait_for_selector(f'[data-station="{target}"][data-drained="yes"]', timeout=5000)
        OUT["drain_shown_secs"] = round(time.monotonic() - t0, 3)
        dash.wait_for_selector(f'[data-station="{target}"][data-drained="yes"]', timeout=5000)
        if not {r["name"]: r for r in status_rows()}[target].get("drained"):
            fail(f"glean status does not show {target} drained")
        if dash.query_selector_all("[data-action]"):
            fail("a user's dashboard shows administrator actions after an update")
        adm.wait_for_timeout(600)
        adm.screenshot(path=os.path.join(shots, "dashboard-admin.png"), full_page=True)
        adm.click(f'[data-station="{target}"] [data-action="undrain"]')
        adm.wait_for_selector(f'[data-station="{target}"][data-drained="no"]', timeout=5000)
        if adm.evaluate("performance.getEntriesByType('navigation').length") != admin_loads:
            fail("the administrator's dashboard reloaded")
        if {r["name"]: r for r in status_rows()}[target].get("drained"):
            fail(f"glean status still shows {target} drained")
        r = dash.evaluate("""async (name) => {
            const s = await (await fetch('/dashboard/api/state', {credentials: 'same-origin'})).json();
            const r = await fetch(`/dashboard/api/stations/${name}/drain`, {method: 'POST',
                credentials: 'same-origin', headers: {'X-Gleaner-CSRF': s.viewer.csrf}});
            return r.status;
        }""", target)
        if r != 403:
            fail(f"a user's session drained a station: {r}")
        if {r["name"]: r for r in status_rows()}[target].get("drained"):
            fail("a user's refused drain changed the pool")

        # Vacate, clicked (its confirmation accepted): the guests on the
        # station leave it now, and their jobs are queued again (idle, or
        # started once more), without a reload.
        adm.on("dialog", lambda d: d.accept())
        on_target = sorted(j for j, v in guests_on_page(adm).items() if v[0] == target)
        if not on_target:
            fail(f"no guest on {target} to vacate")
        runs = {job_name(j): j.get("run_count", 0) for j in q_jobs()}
        t0 = time.monotonic()
        adm.click(f'[data-station="{target}"] [data-action="vacate"]')

        def vacated():
            now = {job_name(j): (job_state(j), j.get("run_count", 0)) for j in q_jobs()}
            return all(j in now and (now[j][0] == "idle" or now[j][1] > runs.get(j, 0)) for j in on_target)
        wait_until(vacated, 20, f"{on_target} vacated from {target}")
        OUT["vacate_requeued_secs"] = round(time.monotonic() - t0, 3)
        OUT["vacated_jobs"] = on_target

        # Revoke, clicked: the administrator revokes its own token. Its
        # session ends with it (the page's API answers 401) and the token
        # is refused on the token API as well.
        mine = adm.eval_on_selector_all(
            "#tokens tr[data-token]",
            "rs => rs.filter(r => r.children[2].textContent === 'admin' && "
            "r.querySelector('[data-action=revoke]')).map(r => r.dataset.token)")
        if len(mine) != 1:
            fail(f"expected one administrator's token listed, found {mine}")
        code, _ = glean_code("drain", "--cancel", target, "--token", CFG["admin_token"])
        if code != 0:
            fail("the administrator's token did not work before its revocation")
        t0 = time.monotonic()
        # What the ended session's page logs afterwards (its 401s) is the
        # point, not an error.
        errors_before_revoke = len(errors)
        adm.click(f'#tokens tr[data-token="{mine[0]}"] [data-action="revoke"]')
        wait_until(lambda: adm.evaluate("fetch('/dashboard/api/state').then(r => r.status)") == 401, 10,
                   "the revoked administrator's session to end")
        OUT["revoke_session_ended_secs"] = round(time.monotonic() - t0, 3)
        code, err = glean_code("drain", target, "--token", CFG["admin_token"])
        if code == 0 or "401" not in err:
            fail(f"a revoked administrator's token still drains: exit {code}, {err!r}")
        if {r["name"]: r for r in status_rows()}[target].get("drained"):
            fail("a revoked token's drain changed the pool")
        actx.close()
        admin_browser.close()

        # The revoked session's page logs its 401s until it is closed.
        errors = errors[:errors_before_revoke] + [e for e in errors[errors_before_revoke:] if "401" not in e]
        errors = [e for e in errors if "403" not in e]
        if errors:
            fail("console errors: " + "; ".join(errors))
        OUT["console_errors"] = 0
        ctx.close()
    print(json.dumps(OUT))


if __name__ == "__main__":
    main()
