/* Full-text search over the book's pages, offline.
 *
 * scripts/docs.sh writes fulltext.js next to the pages: one entry per page,
 * VIT_FULLTEXT.push([file, title, text]), the text being what the page says
 * (its tags stripped, its formulas as TeX). On loading, this script turns each
 * formula into plain text (\frac{a}{b} becomes a/b, \sigma σ, x^{2} x^2), so
 * the search reads and the excerpts show what a reader sees. A query is words
 * and "quoted phrases": a page matches when it contains every word and every
 * phrase (the phrase's words in that order, next to each other). The pages
 * found are listed chapters first, then the other pages of the book (the main
 * page, the glossary, the exercises, ...), then the reference (modules, files,
 * structs), then the tests; among those of a kind, the most occurrences first
 * (one in the title counting ten times). Each shows the first place a word or
 * phrase occurs. Nothing is fetched: a <script> tag loads the index, so it
 * works from file:// too. The query comes from the box or from the address:
 * md_docs_fulltext.html?q=residual, md_docs_fulltext.html?q=%22online+softmax%22.
 */
(function () {
    "use strict";

    function words(query) {
        return query.toLowerCase().split(/[^\p{L}\p{N}_]+/u).filter(function (w) {
            return w.length > 0;
        });
    }

    // the query's terms: each "quoted phrase" as one string (its words joined
    // by single spaces, as the index's text is), and each other word alone
    function terms(query) {
        var out = [], re = /["\u201c\u201d]([^"\u201c\u201d]*)["\u201c\u201d]?|([^"\u201c\u201d]+)/g, m;
        while ((m = re.exec(query))) {
            if (m[1] !== undefined) {
                var phrase = m[1].toLowerCase().replace(/\s+/g, " ").trim();
                if (phrase && out.indexOf(phrase) < 0) out.push(phrase);
            } else {
                words(m[2]).forEach(function (w) { if (out.indexOf(w) < 0) out.push(w); });
            }
        }
        return out;
    }

    // the kind of a page, the order of the results: chapters, the other pages
    // of the book, the reference, the tests (answer keys)
    function kind(file) {
        if (/^md_docs_chapters_/.test(file)) return 0;
        if (/^md_/.test(file) || file === "index.html") return 1;
        if (/-example\.html$/.test(file)) return 3;
        return 2;
    }

    // A formula's TeX as plain text: the symbols as Unicode, \frac{a}{b} as
    // a/b, \sqrt{x} as √x, \mathrm{x} and the like as x, x^{2} as x^2.
    var SYMBOLS = {
        alpha: "\u03b1", beta: "\u03b2", gamma: "\u03b3", delta: "\u03b4", epsilon: "\u03b5",
        varepsilon: "\u03b5", zeta: "\u03b6", eta: "\u03b7", theta: "\u03b8", kappa: "\u03ba",
        lambda: "\u03bb", mu: "\u03bc", nu: "\u03bd", xi: "\u03be", pi: "\u03c0", rho: "\u03c1",
        sigma: "\u03c3", tau: "\u03c4", phi: "\u03c6", varphi: "\u03c6", chi: "\u03c7", psi: "\u03c8",
        omega: "\u03c9", Gamma: "\u0393", Delta: "\u0394", Theta: "\u0398", Lambda: "\u039b",
        Sigma: "\u03a3", Phi: "\u03a6", Psi: "\u03a8", Omega: "\u03a9", ell: "\u2113",
        partial: "\u2202", nabla: "\u2207", infty: "\u221e", sum: "\u03a3", prod: "\u03a0",
        int: "\u222b", cdot: "\u00b7", times: "\u00d7", top: "\u1d40", le: "\u2264", leq: "\u2264",
        ge: "\u2265", geq: "\u2265", ne: "\u2260", neq: "\u2260", approx: "\u2248", sim: "~",
        equiv: "\u2261", "in": "\u2208", odot: "\u2299", otimes: "\u2297", oplus: "\u2295",
        to: "\u2192", rightarrow: "\u2192", leftarrow: "\u2190", mapsto: "\u21a6", pm: "\u00b1",
        ldots: "\u2026", cdots: "\u22ef", dots: "\u2026", vdots: "\u22ee", lVert: "\u2016",
        rVert: "\u2016", Vert: "\u2016", lvert: "|", rvert: "|", vert: "|", mid: "|", langle: "\u27e8",
        rangle: "\u27e9", lfloor: "\u230a", rfloor: "\u230b", lceil: "\u2308", rceil: "\u2309",
        sqrt: "\u221a", prime: "\u2032", circ: "\u2218", forall: "\u2200", exists: "\u2203", quad: " ",
        qquad: " ", lt: "<", gt: ">", emptyset: "\u2205", mathbb: "", colon: ":", star: "*",
        left: "", right: "", big: "", Big: "", bigl: "", bigr: "", Bigl: "", Bigr: "", bigg: "", Bigg: ""
    };
    function texToText(tex) {
        function group(a) { return /^[\p{L}\p{N}_.\u2032]*$/u.test(a) ? a : "(" + a + ")"; }
        var s = tex.replace(/\\[{}]/g, function (b) { return b === "\\{" ? "\u0001" : "\u0002"; })
            .replace(/\\(left|right|[bB]igg?[lr]?)\s*(\\?[()[\]|.]|\\[lr]?[Vv]ert|\\[lr]angle)/g, "$2")
            .replace(/\^\s*\\top(?![A-Za-z])/g, "\\top")
            .replace(/\\(displaystyle|textstyle|limits|nolimits|!)/g, "")
            .replace(/\\[,;: ]/g, " ").replace(/\\\\/g, " ").replace(/&/g, " ");
        for (var k = 0, before = ""; k < 10 && before !== s; k++) {   // innermost groups first
            before = s;
            s = s.replace(/\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, function (m, a, b) {
                return group(a.trim()) + "/" + group(b.trim());
            }).replace(/\\sqrt\s*\{([^{}]*)\}/g, function (m, a) { return "\u221a" + group(a.trim()); })
              .replace(/\\[A-Za-z]+\s*\{([^{}]*)\}/g, function (m, a) {   // \mathrm{x}, \hat{x}, \text{x}
                  var name = /^\\([A-Za-z]+)/.exec(m)[1];
                  if (/^([dt]?frac|sqrt)$/.test(name)) return m;   // its arguments are not plain yet
                  return name in SYMBOLS && SYMBOLS[name] !== "" ? m.replace(/^\\[A-Za-z]+/, SYMBOLS[name]) : a;
              })
              .replace(/([_^])\s*\{([^{}]*)\}/g, function (m, op, a) { return op + group(a.trim()); })
              .replace(/(?<![A-Za-z}]\s*)\{([^{}]*)\}/g, "$1");   // a bare group, not an argument
        }
        s = s.replace(/\\([A-Za-z]+)/g, function (m, name) {
            return name in SYMBOLS ? SYMBOLS[name] : name;
        }).replace(/\\(.)/g, "$1").replace(/[{}]/g, "");
        return s.replace(/\u0001/g, "{").replace(/\u0002/g, "}").replace(/\s+/g, " ").trim();
    }

    // a page's text with each formula, \( … \) or \[ … \], as plain text
    function plainText(text) {
        return text.replace(/\\\(([^]{0,3000}?)\\\)|\\\[([^]{0,3000}?)\\\]|\\f\$([^]{0,3000}?)\\f\$|\\f\[([^]{0,3000}?)\\f\]/g,
            function (m, a, b, c, d) { return " " + texToText(a || b || c || d || "") + " "; })
            .replace(/\\ilinebr/g, " ").replace(/ {2,}/g, " ");
    }

    function count(haystack, needle) {
        var n = 0, at = haystack.indexOf(needle);
        while (at >= 0) { n++; at = haystack.indexOf(needle, at + needle.length); }
        return n;
    }

    // The text around the first occurrence of a term, the term in <mark>.
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
        var ws = terms(query);
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
            hits.push({ page: page, lower: lower, score: score, kind: kind(page[0]) });
        });
        hits.sort(function (a, b) { return a.kind - b.kind || b.score - a.score; });
        var summary = document.createElement("p");
        summary.className = "fulltext-summary";
        summary.textContent = hits.length + (hits.length === 1 ? " page contains " : " pages contain ") +
            (ws.length === 1 ? "\u201c" + ws[0] + "\u201d" : "every one of \u201c" + ws.join("\u201d, \u201c") + "\u201d") +
            (hits.length > 1 ? ", the chapters first" : "");
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
    // (and the formulas become text)
    function decode(page) {
        return [page[0], page[1], page[2]].map(function (s) {
            return plainText(s.replace(/\x01/g, "\\").replace(/\x02/g, "\""));
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
