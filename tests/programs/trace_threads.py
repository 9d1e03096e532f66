"""Several threads doing work, for `snapstate record` tests."""

import threading


def worker(index, out):
    acc = 0
    for i in range(5):
        acc += i * index
    out[index] = acc


def main():
    out = {}
    threads = [threading.Thread(target=worker, args=(k, out), name=f"worker-{k}")
               for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(sorted(out.items()))


main()
