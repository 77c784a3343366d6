"""A real browser for the explorer's tests and screenshots: Debian's chromium, headless, driven by
chromedriver over the WebDriver HTTP protocol with urllib. No selenium, no package.

    python3 -m tests.browser PAGE.html PICTURE.png [--fragment mode=zero&row=2] [--width 880]
                                 a screenshot of the whole page, as the README shows one

    with Browser() as b:         starts chromedriver and one headless session; quits both at exit
        b.open(path, fragment)   a local file, loaded afresh
        b.text(css), b.hover(css), b.click(css), b.keys(*keys), b.run(script, *args)
        b.wait_for(condition, what)    poll until condition() is true, or TimeoutError after 10 s
        b.screenshot(path)

missing() says why no browser can run here (None when chromium and chromedriver are installed):
`apt-get install chromium chromium-driver` installs them. It leaves out every browser but
chromium, and every WebDriver command the tests do not use.
"""

# first: from here on Ctrl-C is one line and exit 130 (common/__init__.py)
from common.cli import OneLineParser, check_outputs, guarded, integer, save_view
import base64
import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from urllib.parse import quote

from common import safe_io
from common.safe_io import write_atomic

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SCREENSHOT = os.path.join("explorer", "attention-explorer.png")   # the picture the README shows
SHOWN = (os.path.join("explorer", "attention-explorer.html"), "mode=zero&row=2&col=4", 880)
#        the page, state and width of that picture: the one command that may rewrite it


def own_picture(page, fragment, width):
    """SCREENSHOT when page, fragment and width are the README's picture's (SHOWN), else None: a
    picture of another page or state is no reason to replace the one the README shows."""
    shown_page = os.path.join(safe_io.HERE, SHOWN[0])
    same_page = os.path.isfile(page) and os.path.isfile(shown_page) and \
        os.path.samefile(page, shown_page)
    return SCREENSHOT if same_page and (fragment, width) == SHOWN[1:] else None

# Headless, and nothing that reaches for the network: this machine's network is closed, and a page
# under test must not need it.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--force-device-scale-factor=1"]
TIMEOUT = 10.0           # seconds any wait may take: generous, since a loaded machine is slow
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"     # the W3C name of an element reference
KEYS = {"Tab": "\ue004", "ArrowLeft": "\ue012", "ArrowUp": "\ue013", "ArrowRight": "\ue014",
        "ArrowDown": "\ue015", "Enter": "\ue007", "Escape": "\ue00c", "Space": "\ue00d"}


def missing():
    """None when chromium and chromedriver are installed; otherwise one line saying what is not."""
    absent = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    if absent:
        return (f"{' and '.join(absent)} not installed (apt-get install chromium "
                f"chromium-driver)")
    return None


class Browser:
    """One chromedriver and one headless chromium session, window width × height in CSS pixels."""

    def __init__(self, width=880, height=900):
        self.profile = tempfile.mkdtemp(prefix="explorer-chromium-")
        self.driver = subprocess.Popen([CHROMEDRIVER, "--port=0"], stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True)
        self.session = None
        try:
            self.url = "http://127.0.0.1:" + self._port()
            options = {"binary": CHROMIUM, "args": FLAGS + [
                f"--user-data-dir={self.profile}", f"--window-size={width},{height}"]}
            answer = self._call("POST", "/session", {"capabilities": {"alwaysMatch": {
                "browserName": "chrome", "goog:chromeOptions": options}}})
            self.session = "/session/" + answer["sessionId"]
        except BaseException:
            self.quit()
            raise

    def _port(self):
        """The port chromedriver says it listens on (it picks a free one)."""
        for line in self.driver.stdout:
            if "started successfully on port" in line:
                return line.rsplit("port", 1)[1].strip(" .\n")
        raise OSError("chromedriver stopped before it said which port it listens on")

    def _call(self, method, path, body=None):
        """One WebDriver command; its "value", or an OSError naming the command and the error."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data, method=method,
                                         headers={"Content-Type": "application/json"})
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    return json.load(response)["value"]
            except urllib.error.HTTPError as e:
                error = json.load(e).get("value", {})
                raise OSError(f"WebDriver {method} {path}: {error.get('error')}: "
                              f"{str(error.get('message')).splitlines()[0]}") from None
            except urllib.error.URLError:       # chromedriver is still starting
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def command(self, method, path, body=None):
        return self._call(method, self.session + path, body)

    def open(self, path, fragment=""):
        """Load a local file afresh (a change of fragment alone would not reload it)."""
        self.command("POST", "/url", {"url": "about:blank"})
        url = "file://" + quote(os.path.abspath(path)) + ("#" + fragment if fragment else "")
        self.command("POST", "/url", {"url": url})

    def run(self, script, *args):
        """The value a script returns, run in the page as a function body."""
        return self.command("POST", "/execute/sync", {"script": script, "args": list(args)})

    def element(self, css):
        return {ELEMENT: self.command("POST", "/element",
                                      {"using": "css selector", "value": css})[ELEMENT]}

    def text(self, css):
        """The text the page shows in the first element css selects, as a reader sees it."""
        return self.command("GET", f"/element/{self.element(css)[ELEMENT]}/text")

    def hover(self, css):
        self._pointer([{"type": "pointerMove", "origin": self.element(css), "x": 0, "y": 0}])

    def click(self, css):
        self._pointer([{"type": "pointerMove", "origin": self.element(css), "x": 0, "y": 0},
                       {"type": "pointerDown", "button": 0}, {"type": "pointerUp", "button": 0}])

    def _pointer(self, actions):
        self.command("POST", "/actions", {"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": actions}]})

    def keys(self, *names):
        """Press and release each key of names (see KEYS) in turn, where the focus is."""
        actions = []
        for name in names:
            actions += [{"type": "keyDown", "value": KEYS[name]},
                        {"type": "keyUp", "value": KEYS[name]}]
        self.command("POST", "/actions",
                     {"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})

    def wait_for(self, condition, what):
        """Poll condition() until it is true; raise TimeoutError naming what after TIMEOUT."""
        deadline = time.monotonic() + TIMEOUT
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {TIMEOUT:g} s for {what}")
            time.sleep(0.02)

    def screenshot(self, path=None):
        """The visible window as PNG bytes, also written to path when given."""
        png = base64.b64decode(self.command("GET", "/screenshot"))
        if path:
            write_atomic(path, png)      # its errors name path, as every write's do
        return png

    def resize(self, width, height):
        self.command("POST", "/window/rect", {"width": width, "height": height})

    def quit(self):
        """End the session and chromedriver (only what this object started), remove the profile."""
        try:
            if self.session:
                self.command("DELETE", "")
        except OSError:
            pass
        finally:
            self.session = None
            self.driver.terminate()
            try:
                self.driver.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self.driver.kill()
                self.driver.wait()
            self.driver.stdout.close()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.quit()


def page_screenshot(page, picture, fragment="", width=880):
    """A screenshot of the whole of page (its fragment's state), width CSS pixels wide, written to
    picture: through a temporary file renamed into place, as every view is written."""
    with Browser(width) as b:
        b.open(page, fragment)
        height, frame = b.run("return [document.documentElement.scrollHeight, "
                              "outerHeight - innerHeight]")
        b.resize(width, height + frame)      # the window's size counts its frame; the page's not
        b.wait_for(lambda: b.run("return innerHeight") >= height, "the window to grow")
        png = b.screenshot()
    save_view(picture, png, own_picture(page, fragment, width))


def main(argv=None):
    parser = OneLineParser(description="A screenshot of a page in headless chromium.")
    parser.add_argument("page", help="the HTML file")
    parser.add_argument("picture", help="the PNG to write")
    parser.add_argument("--fragment", default="", help="the state to open, e.g. mode=zero&row=2")
    parser.add_argument("--width", type=integer, default=880, help="in CSS pixels (default 880)")
    args = parser.parse_args(argv)
    if not 200 <= args.width <= 4000:
        parser.error(f"--width must be 200 to 4000 CSS pixels, got {args.width}")

    def shoot():
        if os.path.isdir(args.page):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", args.page)
        if not os.path.exists(args.page):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", args.page)
        if not os.path.isfile(args.page):
            raise ValueError(f"{args.page} is not a file: expected an HTML file")
        check_outputs([("the picture", args.picture,                  # before a browser
                        own_picture(args.page, args.fragment, args.width))],  # starts for
                      [("the page", args.page)])                              # nothing
        if missing():
            raise OSError(missing())
        page_screenshot(args.page, args.picture, args.fragment, args.width)
        return 0
    return guarded(shoot)


if __name__ == "__main__":
    sys.exit(guarded(main))     # Ctrl-C while the arguments are read too
