// The browser of client.sh, as agenthost mcp login starts $BROWSER with
// the authorization URL: it loads the page and follows its redirects, as
// a browser does when the user has nothing to approve (the suite's
// authorization servers redirect at once), which brings the code back to
// agenthost's loopback address. It prints where it ended and what that
// page said.
const url = process.argv[process.argv.length - 1];
try {
  const res = await fetch(url, { redirect: 'follow' });
  const text = await res.text();
  console.error(`browser: ${res.status} ${res.url}: ${text.slice(0, 200)}`);
} catch (err) {
  console.error(`browser: ${url}: ${err}`);
  process.exit(1);
}
