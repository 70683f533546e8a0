/* Full-text search over the book's pages, offline.
 *
 * scripts/docs.sh writes fulltext.js next to the pages: one entry per page,
 * VIT_FULLTEXT.push([file, title, text]), the text being what the page says
 * (its tags stripped). This script finds the pages that contain every word of
 * the query, best first (the most occurrences, a word in the title counting
 * ten times), and shows each with the first place a word occurs. Nothing is
 * fetched: a <script> tag loads the index, so it works from file:// too.
 * The query comes from the box or from the address: md_docs_fulltext.html?q=residual.
 */
(function () {
    "use strict";

    function words(query) {
        return query.toLowerCase().split(/[^\p{L}\p{N}_]+/u).filter(function (w) {
            return w.length > 0;
        });
    }

    function count(haystack, needle) {
        var n = 0, at = haystack.indexOf(needle);
        while (at >= 0) { n++; at = haystack.indexOf(needle, at + needle.length); }
        return n;
    }

    // The text around the first occurrence of a word, the word in <mark>.
    function excerpt(text, lower, ws) {
        var at = -1, word = "";
        ws.forEach(function (w) {
            var i = lower.indexOf(w);
            if (i >= 0 && (at < 0 || i < at)) { at = i; word = w; }
        });
        var p = document.createElement("p");
        var from = Math.max(0, at - 80), to = Math.min(text.length, at + word.length + 120);
        p.appendChild(document.createTextNode((from > 0 ? "… " : "") + text.slice(from, at)));
        var mark = document.createElement("mark");
        mark.textContent = text.slice(at, at + word.length);
        p.appendChild(mark);
        p.appendChild(document.createTextNode(text.slice(at + word.length, to) + (to < text.length ? " …" : "")));
        return p;
    }

    function search(query, out) {
        var ws = words(query);
        out.textContent = "";
        if (ws.length === 0) return;
        var hits = [];
        (window.VIT_FULLTEXT || []).forEach(function (page) {
            var lower = page[2].toLowerCase(), title = page[1].toLowerCase(), score = 0;
            for (var i = 0; i < ws.length; i++) {
                var n = count(lower, ws[i]) + 10 * count(title, ws[i]);
                if (n === 0) return;
                score += n;
            }
            hits.push({ page: page, lower: lower, score: score });
        });
        hits.sort(function (a, b) { return b.score - a.score; });
        var summary = document.createElement("p");
        summary.className = "fulltext-summary";
        summary.textContent = hits.length + (hits.length === 1 ? " page contains " : " pages contain ") +
            (ws.length === 1 ? "\u201c" + ws[0] + "\u201d" : "every one of \u201c" + ws.join("\u201d, \u201c") + "\u201d");
        out.appendChild(summary);
        hits.slice(0, 100).forEach(function (h) {
            var div = document.createElement("div");
            div.className = "fulltext-result";
            var a = document.createElement("a");
            a.className = "fulltext-hit";
            a.href = h.page[0];
            a.textContent = h.page[1];
            div.appendChild(a);
            div.appendChild(excerpt(h.page[2], h.lower, ws));
            out.appendChild(div);
        });
    }

    // the index stores a backslash as \x01 and a double quote as \x02 (docs.sh)
    function decode(page) {
        return [page[0], page[1], page[2]].map(function (s) {
            return s.replace(/\x01/g, "\\").replace(/\x02/g, "\"");
        });
    }

    window.addEventListener("load", function () {
        window.VIT_FULLTEXT = (window.VIT_FULLTEXT || []).map(decode);
        var box = document.getElementById("fulltext-query");
        var out = document.getElementById("fulltext-results");
        if (!box || !out) return;
        var q = new URLSearchParams(window.location.search).get("q");
        if (q) box.value = q;
        box.addEventListener("input", function () { search(box.value, out); });
        search(box.value, out);
    });
})();
