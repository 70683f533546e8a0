/**
 * @file serve.h
 * @brief The test server: one process per grade that forks each test
 *        (`run --serve FD`), and the grader's end of it.
 *
 * The grader runs each test in a process of its own, so that a crash, an
 * endless loop or an exit() ends that test alone. It used to start each of
 * them as a new program: the box (bubblewrap), the limits (prlimit) and the
 * runner loading its libraries, about 25 ms a test on a 2-core machine, for the
 * roughly 4,400 tests `make test` grades. Now it starts that program once per
 * grade, as a server, and the server forks one process per test:
 *
 *     grader --- socket ---> [box, limits] run --serve 3
 *       |  "SUITE/TEST" + the test's two pipes      |  fork()
 *       |                                           v
 *       |<--- output pipe, record pipe ------ the test's process
 *       |<--- its wait status (socket) ------ the server, when it has ended
 *
 * What a test gets is what a new program got: stdin /dev/null, stdout and
 * stderr its output pipe, descriptor 3 its record pipe, a process group of its
 * own (killed when the test ends, whatever it left behind), the box's limits
 * (a CPU limit counts each process from zero). The tests of one grade share the
 * box itself: its empty /tmp, and any process that left its group, until the
 * grade ends and the box with it. The server decides nothing: the grader times
 * each test, reads its record and judges it, and when the time is up it ends
 * the server, box and all, and starts another for the next test.
 */
#ifndef VIT_TESTS_SERVE_H
#define VIT_TESTS_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/** The grader's end of a test server. All zero: not started. */
typedef struct {
    char *const *cmd; ///< the words that start it (it is given `--serve 3` after them)
    int n_cmd;
    pid_t pid;        ///< its process, leader of its process group; 0 when it is not running
    int sock;         ///< the grader's end of the socket
    int log;          ///< read end of its own stdout and stderr (not a test's)
    char said[2048];  ///< the start of what it said there, for a server that could not start
    size_t said_len;
} TestServer;

/**
 * @brief Starts the server if it is not running, and waits for it to say it is
 *        ready (a box and a runner starting on a busy machine: seconds).
 * @param[out] why  on false, why it could not start (and what it said)
 */
bool server_up(TestServer *s, char *why, size_t why_size);

/** @brief Asks the server to run test @p name with these two pipes (their write ends). */
bool server_send(TestServer *s, const char *name, int out_fd, int record_fd);

/**
 * @brief The wait status of the test asked for, if the server has sent it.
 * @return 1 with *status; 0 when it is still running; -1 when the server has
 *         ended (the test ended with it: the server is stopped)
 */
int server_status(TestServer *s, int *status);

/** @brief Reads what the server said on its stdout and stderr (kept: its start). */
void server_read_log(TestServer *s);

/**
 * @brief Ends the server: asked (its socket closed: it ends when the test it
 *        runs ends) or, with @p now, killed with its test and its box.
 */
void server_stop(TestServer *s, bool now);

/**
 * @brief Signal-safe: stops the server and the test it runs (the grader is
 *        being stopped).
 */
void server_stop_from_signal(pid_t server);

/**
 * @brief `run --serve FD`: the server itself. FD is its end of the socket.
 *        It runs each test asked for with @p run_test (which does not return) in
 *        a forked process, until the socket closes.
 * @return 2 for bad usage (otherwise it does not return)
 */
int serve_main(const char *program, int argc, char **argv,
               void (*run_test)(const char *program, const char *name, int record_fd));

#endif
