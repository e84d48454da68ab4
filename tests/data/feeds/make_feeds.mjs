// Makes the feed fixtures of tests/test_feeds.py with real generators: the npm packages
// `feed` 5.2.1 (MIT, https://github.com/jpmonette/feed) for RSS 2.0, Atom 1.0 and JSON
// Feed 1, and `opml` 0.5.8 (MIT, by OPML's author Dave Winer) for the subscription list.
//   npm install feed@5.2.1 opml@0.5.8 && node tests/data/feeds/make_feeds.mjs tests/data/feeds
// BASE is replaced by the test server's address when the tests serve these files.
import { Feed } from "feed";
import opml from "opml";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const out = process.argv[2] || ".";
const BASE = "http://BASE";
const para = (topic, n) => Array.from({ length: n }, (_, i) =>
  `<p>Paragraph ${i + 1} about ${topic}: the observers counted the birds at dawn and ` +
  `noted the wind, the tide and the light over the marsh before the crowds came.</p>`).join("");

const feed = new Feed({
  title: "Marsh Notes",
  description: "Field notes from the estuary",
  id: `${BASE}/`,
  link: `${BASE}/`,
  language: "en",
  copyright: "CC BY 4.0",
  updated: new Date(Date.UTC(2026, 2, 3, 9, 0, 0)),
  feedLinks: { json: `${BASE}/feed.json`, atom: `${BASE}/atom.xml` },
  author: { name: "Ana Lima", email: "ana@example.org" },
});
const posts = [
  ["heron-return", "The herons return", "grey herons", Date.UTC(2026, 2, 1, 7, 30)],
  ["godwit-flock", "A flock of godwits", "bar-tailed godwits", Date.UTC(2026, 2, 2, 8, 0)],
  ["spoonbill-été", "Spoonbills in summer (été)", "spoonbills", Date.UTC(2026, 2, 3, 6, 15)],
];
for (const [slug, title, topic, when] of posts) {
  feed.addItem({
    title, id: `${BASE}/posts/${slug}`, link: `${BASE}/posts/${slug}.html`,
    description: `A short note on ${topic}.`, content: para(topic, 6),
    author: [{ name: "Ana Lima" }], date: new Date(when),
    category: [{ name: "birds" }],
  });
}
// The same article announced again under another id (a re-post): one item, two entries.
feed.addItem({
  title: "The herons return (again)", id: `${BASE}/reposts/1`,
  link: `${BASE}/posts/heron-return.html`, description: "A short note on grey herons.",
  content: para("grey herons", 6), date: new Date(Date.UTC(2026, 2, 3, 12, 0)),
});
writeFileSync(join(out, "marsh.json"), feed.json1());
writeFileSync(join(out, "marsh.rss"), feed.rss2());
writeFileSync(join(out, "marsh.atom"), feed.atom1());

// A subscription list with folders (nested), as a feed reader exports it.
const outline = {
  opml: {
    head: { title: "Subscriptions of Ana Lima", dateCreated: "Tue, 03 Mar 2026 09:00:00 GMT" },
    body: {
      subs: [
        { text: "Nature", subs: [
          { text: "Birds", subs: [
            { text: "Marsh Notes", type: "rss", xmlUrl: `${BASE}/marsh.rss`, htmlUrl: `${BASE}/` },
          ] },
          { text: "Tides (JSON)", type: "rss", xmlUrl: `${BASE}/marsh.json` },
        ] },
        { text: "Teasers", type: "rss", xmlUrl: `${BASE}/teasers.rss` },
        { text: "Gone feed", type: "rss", xmlUrl: `${BASE}/gone.rss` },
      ],
    },
  },
};
writeFileSync(join(out, "subscriptions.opml"), opml.stringify(outline));
