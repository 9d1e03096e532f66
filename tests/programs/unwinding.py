"""An exception that leaves one frame and is caught in its caller, which then returns None:
the ``raised`` step and a real ``return None`` side by side (tests of call tracing)."""


def divide(x):
    return 1 / x


def catches():
    try:
        divide(0)
    except ZeroDivisionError:
        pass
    return None


if __name__ == "__main__":
    print(catches())
