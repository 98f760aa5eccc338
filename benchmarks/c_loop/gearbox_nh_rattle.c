/* nh-rattle (the GNI with the Stormer-Verlet discrete Lagrangian, explicit path) on the gearbox,
 * written as a plain C loop: the reference for the cost of dalembert's compiled step (issue 15).
 * G = I, V = (q1^2 + q2^2)/2 + cos q3 - eps sin 2q3, mu(q) = (1, sin q3, 0), eps = 1/5.
 * Step (state q, p+, g = grad V(q)): s = mu.p / (mu.mu); d1 = -2 s mu - (h/2) g;
 * q1 = q + h (p + d1); g1 = grad V(q1); p1 = p + d1 - (h/2) g1.
 * With COMPENSATED defined, q and p are summed by Kahan's method as dalembert does by default.
 * Usage: gearbox_nh_rattle N h  -> prints "seconds q1 q2 q3" */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const double EPS = 0.2;

static void grad_v(const double *q, double *g) {
    g[0] = q[0];
    g[1] = q[1];
    g[2] = -sin(q[2]) - 2.0 * EPS * cos(2.0 * q[2]);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10000000L;
    double h = argc > 2 ? atof(argv[2]) : 1e-3;
    double q[3] = {0.4835418947237142, -0.8170087898739087, 0.08228764275297751};
    double p[3] = {0.07179002586923802, -0.8734131349760811, 0.9720667079170427};
    double g[3], cq[3] = {0, 0, 0}, cp[3] = {0, 0, 0};
    grad_v(q, g);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long k = 0; k < n; k++) {
        double sn = sin(q[2]);
        double mu[3] = {1.0, sn, 0.0};
        double s = (p[0] + sn * p[1]) / (1.0 + sn * sn);
        double d1[3], dq[3];
        for (int i = 0; i < 3; i++) {
            d1[i] = -2.0 * s * mu[i] - 0.5 * h * g[i];
            dq[i] = h * (p[i] + d1[i]);
        }
#ifdef COMPENSATED
        for (int i = 0; i < 3; i++) { double d = dq[i] - cq[i], t = q[i] + d; cq[i] = (t - q[i]) - d; q[i] = t; }
#else
        for (int i = 0; i < 3; i++) q[i] += dq[i];
#endif
        grad_v(q, g);
#ifdef COMPENSATED
        for (int i = 0; i < 3; i++) {
            double d = d1[i] - 0.5 * h * g[i] - cp[i], t = p[i] + d; cp[i] = (t - p[i]) - d; p[i] = t;
        }
#else
        for (int i = 0; i < 3; i++) p[i] += d1[i] - 0.5 * h * g[i];
#endif
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    printf("%.9f %.17g %.17g %.17g\n", sec, q[0], q[1], q[2]);
    (void)cq; (void)cp;
    return 0;
}
