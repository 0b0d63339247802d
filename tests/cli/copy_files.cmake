# Copies FILES (a ;-list) into the folder DST, making it first: a test fixture's set-up.
file(MAKE_DIRECTORY "${DST}")
file(COPY ${FILES} DESTINATION "${DST}")
