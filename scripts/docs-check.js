/* The narrative pages as a reader sees them, for scripts/docs-check.sh.
 *
 * docs-check.sh writes build/docs/check/pages.html, which sets DOCS_CHECK_BASE
 * (the book's folder, a file:// address), DOCS_CHECK_PAGES (the pages to read)
 * and DOCS_CHECK_SEARCHES (the full-text searches to run), and loads this
 * script. One Chromium opens that page: each book page is loaded in turn in an
 * <iframe>, MathJax is let finish, and what the browser shows is checked. Every
 * problem becomes one line "PAGE<tab>what is wrong" of <pre id="report">, which
 * gets data-done="1" when all pages are read; docs-check.sh reads the line
 * from the dumped DOM.
 *
 * On a page, the prose (the page's contents, without code spans, code blocks,
 * declarations, formulas and captured screens) must show no Markdown that
 * Doxygen left as text:
 *   - "**" (bold that was not read);
 *   - a backtick (a code span that was not closed);
 *   - a ‘…’ (Doxygen's reading of `…' : a single quote before the closing
 *     backtick ends a code span early; write such a span with double backticks);
 *   - *word* or *a few words* (emphasis that was not read, as in d*name*;
 *     a single letter, as in CIE L*a*b* or n*N*D, is taken for what it says);
 * no link of a plain capitalised word (Chapter, Tensor, State) to the struct
 * of that name outside code in the page's own text (all of a Markdown page, a
 * folder's or a module's description): there it reads as the English word
 * (write %Chapter),
 * and a type is named as code (`Tensor`), where the link is welcome;
 * and every formula typeset by MathJax, without an error box.
 *
 * A search is [query, first, phrase]: the results of md_docs_fulltext.html?q=
 * query must list the page first (when first is set), their excerpts must be
 * plain text (no TeX: \frac, \( … \), \f$), and, for a query in double quotes,
 * the pages listed must be exactly those whose text holds the phrase.
 */
(function () {
    "use strict";
    var report = document.getElementById("report");
    var CODE = "code, pre, kbd, samp, tt, .fragment, .line, script, style, textarea, input, " +
        ".MathJax, .MathJax_Display, .MathJax_Preview, .memItemLeft, .memItemRight, " +
        ".memTemplParams, .memname, .memproto, .vitview-screen, .ttc";
    var TEX = /\\(frac|tfrac|sqrt|mathrm|text|sum|left|right|cdot|top|qquad|quad|hat|big|Big|partial|sigma|mathrel)(?![A-Za-z])|\\[()[\]]|\\f[$[\]]/;

    function problem(page, what) {
        report.appendChild(document.createTextNode(page + "\t" + what.replace(/\s+/g, " ") + "\n"));
    }

    // the text around position at of text, for a message
    function around(text, at, length) {
        var from = Math.max(0, at - 30), to = Math.min(text.length, at + length + 30);
        return "\u201c" + (from > 0 ? "\u2026" : "") + text.slice(from, to).replace(/\s+/g, " ").trim() +
            (to < text.length ? "\u2026" : "") + "\u201d";
    }

    // what the page says outside code: its text nodes, a code element as a space
    function prose(doc) {
        var parts = [];
        var roots = [doc.querySelector("div.header .title"), doc.querySelector("div.contents")];
        roots.forEach(function (root) {
            if (!root) return;
            var walk = doc.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
                acceptNode: function (node) {
                    if (node.nodeType === 1 && node.matches(CODE)) { parts.push(" "); return NodeFilter.FILTER_REJECT; }
                    return NodeFilter.FILTER_ACCEPT;
                }
            });
            var node;
            while ((node = walk.nextNode())) {
                if (node.nodeType === 3) parts.push(node.nodeValue);
                else if (/^(P|LI|TD|TH|DD|DT|H[1-6]|DIV|BR|TR)$/.test(node.tagName)) parts.push("\n");
            }
            parts.push("\n");
        });
        return parts.join("");
    }

    var MARKERS = [
        [/\*\*/g, "literal ** (bold Doxygen did not read)"],
        [/`/g, "a backtick left in the text (a code span Doxygen did not close)"],
        [/\u2018[^\u2019\n]*\u2019/g, "a \u2018quotation\u2019 Doxygen made of a code span (a ' before its closing backtick: write the span with double backticks)"],
        [/(^|[^*])(\*[A-Za-z][A-Za-z' -]*[A-Za-z]\*)(?![A-Za-z0-9*])/g, "a literal *word* (emphasis Doxygen did not read)"]
    ];

    function checkPage(page, doc) {
        var text = prose(doc);
        MARKERS.forEach(function (m) {
            var re = m[0], hit;
            re.lastIndex = 0;
            while ((hit = re.exec(text))) {
                var at = hit.index + (hit.length > 2 ? hit[1].length : 0);
                var len = hit.length > 2 ? hit[2].length : hit[0].length;
                problem(page, m[1] + ": " + around(text, at, len));
                if (re.lastIndex === hit.index) re.lastIndex++;
            }
        });
        // the words of a page's own text (a folder's or a module's description, all
        // of a Markdown page), not the briefs of the files or groups it lists
        doc.querySelectorAll("div.contents div.textblock a.el").forEach(function (a) {
            var href = a.getAttribute("href") || "", word = a.textContent;
            if (!/^(struct|union)[^\/#]*\.html/.test(href) || !/^[A-Z][a-z]+$/.test(word) || a.closest(CODE)) return;
            var context = (a.parentNode.textContent || "");
            var at = context.indexOf(word);
            problem(page, "the word \u201c" + word + "\u201d links to the struct " + word + " (" +
                around(context, at, word.length) + "): write %" + word + " for the word, `" + word + "` for the type");
        });
        // formulas: each of MathJax's script elements has its rendering (a frame) and no error
        var tex = doc.querySelectorAll('script[type^="math/tex"]').length;
        var frames = doc.querySelectorAll('[id^="MathJax-Element-"][id$="-Frame"]').length;
        var raw = (doc.body.innerText.match(/\\\(|\\\[/g) || []).length;
        if (tex !== frames || raw > 0)
            problem(page, (tex + raw) + " formulas, " + frames + " typeset by MathJax");
        if (doc.querySelector(".merror, .mjx-merror, .MathJax_Error"))
            problem(page, "MathJax shows an error box");
    }

    function plain(s) { return s.replace(/\s+/g, " ").trim().toLowerCase(); }

    function checkSearch(search, doc, win) {
        var query = search[0], first = search[1], name = "md_docs_fulltext.html?q=" + query;
        var hits = Array.prototype.map.call(doc.querySelectorAll("a.fulltext-hit"), function (a) {
            return a.getAttribute("href");
        });
        if (hits.length === 0) { problem(name, "no page found"); return; }
        if (first && hits[0] !== first)
            problem(name, first + " is not the first hit: " + hits.slice(0, 3).join(", ") + " come first");
        doc.querySelectorAll(".fulltext-result p").forEach(function (p) {
            var m = TEX.exec(p.textContent);
            if (m) problem(name, "an excerpt shows TeX (" + m[0] + "): " + around(p.textContent, m.index, m[0].length));
        });
        var phrase = /^"(.*)"$/.exec(query);
        if (phrase) {
            var want = plain(phrase[1]), words = want.split(" ");
            var holds = [], both = 0;
            (win.VIT_FULLTEXT || []).forEach(function (page) {
                var text = plain(page[2] + " " + page[1]);
                if (text.indexOf(want) >= 0) holds.push(page[0]);
                else if (words.every(function (w) { return text.indexOf(w) >= 0; })) both++;
            });
            hits.forEach(function (h) {
                if (holds.indexOf(h) < 0) problem(name, h + " is listed but does not hold the phrase \u201c" + want + "\u201d");
            });
            holds.forEach(function (h) {
                if (hits.indexOf(h) < 0 && hits.length < 100) problem(name, h + " holds the phrase but is not listed");
            });
            if (both === 0)
                problem(name, "no page holds the words of \u201c" + want + "\u201d apart, so the search's phrase rule is not tested");
        }
    }

    var jobs = [];
    DOCS_CHECK_PAGES.forEach(function (page) { jobs.push({ page: page, url: page }); });
    // the self-test's copy of a page, with a mistake of each kind planted
    if (window.DOCS_CHECK_PLANTED) jobs.push({ page: "planted", url: DOCS_CHECK_PLANTED });
    DOCS_CHECK_SEARCHES.forEach(function (s) {
        jobs.push({ search: s, url: "md_docs_fulltext.html?q=" + encodeURIComponent(s[0]) });
    });

    function next(i) {
        if (i >= jobs.length) { report.setAttribute("data-done", String(jobs.length)); return; }
        var job = jobs[i], frame = document.createElement("iframe"), done = false;
        function finish() {
            if (done) return;
            done = true;
            try {
                var doc = frame.contentDocument, win = frame.contentWindow;
                if (job.search) checkSearch(job.search, doc, win);
                else checkPage(job.page, doc);
            } catch (e) {
                problem(job.page || job.url, "could not be read: " + e);
            }
            frame.remove();
            next(i + 1);
        }
        frame.width = 1280;
        frame.height = 800;
        frame.onload = function () {
            var win = frame.contentWindow;
            // after MathJax's first typesetting, when the page has it
            if (win && win.MathJax && win.MathJax.Hub && win.MathJax.Hub.Register)
                win.MathJax.Hub.Register.StartupHook("End", function () { win.MathJax.Hub.Queue(finish); });
            else
                finish();
        };
        setTimeout(function () {
            if (!done) problem(job.page || job.url, "did not finish loading (MathJax?) in 20 s");
            finish();
        }, 20000);
        frame.src = /^file:/.test(job.url) ? job.url : DOCS_CHECK_BASE + job.url;
        document.body.appendChild(frame);
    }
    next(0);
})();
