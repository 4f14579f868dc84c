-- name: L :many
SELECT id, l, O, note FROM i   
WHERE l > ?   
ORDER BY id;

-- name: AddI :exec
INSERT INTO i (l, O, note)   
VALUES (?, ?, 'two trailing spaces:  
and a tab:	
end');

-- name: FindNote :one
SELECT id FROM i WHERE note = 'two trailing spaces:  
and a tab:	
end' AND O = ?;
